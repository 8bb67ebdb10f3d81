/* crit.h - the Criterion macros the suites use, or, where Criterion is
 * absent (the GPU machine has none and cannot install it), a small
 * stand-in with the same spelling: each Test registers itself, the runner
 * in crit_main.c forks one process per test (as Criterion does), applies
 * the suite's .init/.fini/.timeout, and prints "N passed, N failed".
 * A test skips with exit code 77 (cr_skip_test). */
#ifndef CCA_CRIT_H
#define CCA_CRIT_H

#ifndef CCA_CRIT_COMPAT
#include <criterion/criterion.h>
#else

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct crit_opts {
    int unused_;                          /* lets the option list be empty */
    void (*init)(void);
    void (*fini)(void);
    double timeout;                       /* seconds; 0: none */
    const char *description;
    bool disabled;
};

void crit_register_test(const char *suite, const char *name, void (*fn)(void), const struct crit_opts *o);
void crit_register_suite(const char *suite, const struct crit_opts *o);
void crit_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
void crit_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void crit_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define TestSuite(suite, ...)                                                                     \
    static const struct crit_opts crit_suite_opts_##suite = { .unused_ = 0, __VA_ARGS__ };       \
    __attribute__((constructor)) static void crit_suite_reg_##suite(void)                        \
    {                                                                                             \
        crit_register_suite(#suite, &crit_suite_opts_##suite);                                   \
    }

#define Test(suite, name, ...)                                                                    \
    static void suite##_##name##_impl(void);                                                      \
    static const struct crit_opts crit_opts_##suite##_##name = { .unused_ = 0, __VA_ARGS__ };    \
    __attribute__((constructor)) static void crit_reg_##suite##_##name(void)                     \
    {                                                                                             \
        crit_register_test(#suite, #name, suite##_##name##_impl, &crit_opts_##suite##_##name);   \
    }                                                                                             \
    static void suite##_##name##_impl(void)

/* "" __VA_ARGS__: the optional message's format is a string literal */
#define crit_check_(cond, expr, ...) \
    do { if (!(cond)) crit_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__); } while (0)

#define cr_assert(c, ...)            crit_check_((c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...)        crit_check_(!(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...)      crit_check_((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)     crit_check_((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)      crit_check_((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)     crit_check_((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)      crit_check_((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)     crit_check_((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)       crit_check_((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)   crit_check_((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)  crit_check_(strcmp((a), (b)) == 0, #a " equals " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) crit_check_(strcmp((a), (b)) != 0, #a " differs from " #b, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) \
    crit_check_((a) - (b) <= (eps) && (b) - (a) <= (eps), #a " == " #b " within " #eps, __VA_ARGS__)
#define cr_assert_fail(...)          crit_fail(__FILE__, __LINE__, "cr_assert_fail", "" __VA_ARGS__)
#define cr_skip_test(...) crit_skip("" __VA_ARGS__)
#define cr_log_info(...)  crit_log("" __VA_ARGS__)

#endif /* CCA_CRIT_COMPAT */
#endif /* CCA_CRIT_H */
