/* pw_device.h: which accelerators this process can see. Answers 0 when the CUDA backend was
 * not built, so callers (placement checks, tests that exit 77) need no #ifdef of their own. */
#ifndef PW_DEVICE_H
#define PW_DEVICE_H

int pw_device_count(void);

#endif
