/* test_outputs.c - the run's outputs replaced as one (output_commit_all): where a rename fails
 * after another was made, the file it replaced is put back, a file it created is removed, and
 * no temporary or kept-aside file is left. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <mpi.h>

#include "fd_error.h"
#include "output.h"

static void put(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* the file's text ("" where there is none) */
static const char *text_of(const char *path)
{
  static char buf[64];
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return "";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* an output named dir/name, its temporary file holding `text` */
static void output_in(fd_output *o, const char *opt, const char *dir, const char *name, const char *text)
{
  memset(o, 0, sizeof *o);
  snprintf(o->opt, sizeof o->opt, "%s", opt);
  snprintf(o->path, sizeof o->path, "%s/%s", dir, name);
  assert_int_equal(output_tmp_name(o->path, 42, o->tmp, sizeof o->tmp), 0);
  put(o->tmp, text);
}

/* entries of dir other than the named ones */
static int others(const char *dir, const char *a, const char *b)
{
  char cmd[512], line[256];
  snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  int n = 0;
  while (fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, a) != 0 && strcmp(line, b) != 0) {
      print_message("left in %s: %s\n", dir, line);
      n++;
    }
  }
  pclose(p);
  return n;
}

static void test_a_failed_rename_undoes_the_others(void **state)
{
  (void)state;
  char dir[] = "/tmp/fdmini-test-outputs-XXXXXX", sub[128], path[160];
  assert_non_null(mkdtemp(dir));
  fd_output dump, json;
  const fd_output *both[2] = {&dump, &json};
  /* the JSON's target a directory that holds a file: its rename fails after the dump's */
  snprintf(sub, sizeof sub, "%s/run.json", dir);
  assert_int_equal(mkdir(sub, 0777), 0);
  snprintf(path, sizeof path, "%s/keep", sub);
  put(path, "x");
  /* an existing dump: put back */
  snprintf(path, sizeof path, "%s/u.raw", dir);
  put(path, "OLD");
  output_in(&dump, "--dump", dir, "u.raw", "NEW");
  output_in(&json, "--json", dir, "run.json", "{}");
  assert_int_equal(output_commit_all(both, 2), FD_ERR_IO);
  assert_non_null(strstr(fd_error_message(), "--json: cannot rename"));
  assert_string_equal(text_of(path), "OLD");
  assert_int_equal(others(dir, "u.raw", "run.json"), 0);
  /* a new dump: removed */
  unlink(path);
  output_in(&dump, "--dump", dir, "u.raw", "NEW");
  output_in(&json, "--json", dir, "run.json", "{}");
  assert_int_equal(output_commit_all(both, 2), FD_ERR_IO);
  assert_int_equal(access(path, F_OK), -1);
  assert_int_equal(others(dir, "run.json", "run.json"), 0);
  /* both possible: both replaced, nothing else left */
  snprintf(path, sizeof path, "%s/run.json/keep", dir);
  unlink(path);
  rmdir(sub);
  snprintf(path, sizeof path, "%s/u.raw", dir);
  put(path, "OLD");
  put(sub, "old record");
  output_in(&dump, "--dump", dir, "u.raw", "NEW");
  output_in(&json, "--json", dir, "run.json", "{}");
  assert_int_equal(output_commit_all(both, 2), FD_OK);
  assert_string_equal(text_of(path), "NEW");
  assert_string_equal(text_of(sub), "{}");
  assert_int_equal(others(dir, "u.raw", "run.json"), 0);
  /* an output not asked for is skipped */
  memset(&json, 0, sizeof json);
  output_in(&dump, "--dump", dir, "u.raw", "NEWER");
  assert_int_equal(output_commit_all(both, 2), FD_OK);
  assert_string_equal(text_of(path), "NEWER");
  unlink(path);
  unlink(sub);
  assert_int_equal(rmdir(dir), 0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_a_failed_rename_undoes_the_others),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
