/* gpt2.c: being written; see include/pw_model.h. */
typedef int pw_gpt2_placeholder;
