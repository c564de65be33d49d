/* safetensors.c: being written; see include/pw_model.h. */
typedef int pw_safetensors_placeholder;
