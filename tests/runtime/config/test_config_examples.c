/* test_config_examples.c: the configurations shipped in configs/ load and pass validation, as
 * a user would run them (paths given as arguments by meson). */
#include "pw_config.h"
#include "pw_test.h"

int main(int argc, char **argv)
{
    CHECK(argc > 1, "no example given");
    for (int i = 1; i < argc; i++) {
        PwConfig c;
        PwErr err = {""};
        CHECK(pw_config_defaults(&c) == 0, "defaults");
        int rc = pw_config_load_file(&c, argv[i], &err);
        CHECK(rc == 0, "%s", err.msg);
        if (rc == 0) CHECK(pw_config_validate(&c, &err) == 0, "%s: %s", argv[i], err.msg);
        CHECK(pw_config_num_steps(&c) >= 1, "%s: no PPO step", argv[i]);
        pw_config_free(&c);
    }
    return pw_test_done("config_examples");
}
