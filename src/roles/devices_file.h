/* devices_file.h: devices.txt in a run folder (devices_file.c). */
#ifndef PW_DEVICES_FILE_H
#define PW_DEVICES_FILE_H

#include <stdint.h>

/* Writes DIR/devices.txt: `ppo_world devices` as this process sees it, under a line saying when
 * (`resumed_step` < 0: the start of the run, which replaces the file; else the resumption at that
 * step, appended to what the file held). A failure is a warning on stderr: the file describes
 * the run and is never a reason to stop it. */
void pw_devices_file_write(const char *dir, int64_t resumed_step);

#endif
