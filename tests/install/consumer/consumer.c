/* A program built against the installed mbk package. */
#include <mbk/mbk.h>
#include <stdio.h>

static int alloc_one_q(void *impl, const mbk_subsystem_ctx *c, mbk_state *s)
{
    (void)impl;
    const double q0 = 0.25;
    return mbk_state_allocate_q(s, mbk_subsystem_ctx_get_index(c), 1, &q0) < 0;
}

int main(void)
{
    static const mbk_subsystem_ops ops = {.name = "one-q", .realize_topology = alloc_one_q};
    mbk_system *sys = mbk_system_create("consumer");
    mbk_system_add_subsystem(sys, &ops, NULL);
    mbk_state *s = mbk_state_create();
    int ok = mbk_system_realize_topology(sys) == MBK_OK && mbk_state_init(s, sys) == MBK_OK &&
             mbk_system_realize(sys, s, MBK_STAGE_REPORT) == MBK_OK &&
             mbk_state_get_nq(s) == 1 && mbk_state_get_q(s)[0] == 0.25;
    printf("mbk %s: consumer %s\n", mbk_version(), ok ? "ok" : "FAILED");
    mbk_state_destroy(s);
    mbk_system_destroy(sys);
    return ok ? 0 : 1;
}
