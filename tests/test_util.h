/* test_util.h - small helpers the cmocka unit tests share: reading back what a printer wrote to
 * a tmpfile, counting its lines, skipped cases and the exit status they give. Test-only,
 * header-only. */
#ifndef FDMINI_TEST_UTIL_H
#define FDMINI_TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* Everything written to f so far (f is left rewound), NUL-terminated; the caller frees it. */
static inline char *read_all(FILE *f)
{
  long n = ftell(f);
  assert_true(n >= 0);
  char *s = malloc((size_t)n + 1);
  assert_non_null(s);
  rewind(f);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  return s;
}

/* Newlines in s. */
static inline int count_lines(const char *s)
{
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* Cases this program skipped (test_skip). */
static inline int *test_skipped(void)
{
  static int n;
  return &n;
}

/* cmocka's skip(), counted: a case that cannot run here. */
#define test_skip()                                                                                \
  do {                                                                                             \
    ++*test_skipped();                                                                             \
    skip();                                                                                        \
  } while (0)

/* The exit status of a test program of `cases` cases, `failed` of which failed (cmocka's
 * count): 77 where every case skipped (test_skip), which ctest counts as skipped
 * (SKIP_RETURN_CODE 77), never as passed. */
static inline int test_exit_status(int failed, int cases)
{
  return failed ? failed : (*test_skipped() == cases && cases > 0 ? 77 : 0);
}

#endif
