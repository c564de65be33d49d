/* checkpoint.c: being written; see include/pw_model.h. */
typedef int pw_checkpoint_placeholder;
