/* json.c - streaming JSON writer (json.h). Keys are NULL inside arrays. */
#include <math.h>

#include "json.h"

static void sep(fd_json *j, const char *key)
{
  if (j->count[j->depth]++) fputc(',', j->f);
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  if (key) fprintf(j->f, "\"%s\": ", key);
}

static void put_string(FILE *f, const char *s)
{
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

void json_open(fd_json *j, FILE *f)
{
  j->f = f;
  j->depth = 1;
  j->count[1] = 0;
  fputc('{', f);
}

void json_close(fd_json *j)
{
  fputs("\n}\n", j->f);
  j->depth = 0;
}

static void open_(fd_json *j, const char *key, char c)
{
  sep(j, key);
  fputc(c, j->f);
  j->count[++j->depth] = 0;
  j->closer[j->depth] = c == '{' ? '}' : ']';
}

void json_object(fd_json *j, const char *key) { open_(j, key, '{'); }
void json_array(fd_json *j, const char *key) { open_(j, key, '['); }

void json_end(fd_json *j)
{
  char close = j->closer[j->depth];
  j->depth--;
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  fputc(close, j->f);
}

void json_str(fd_json *j, const char *key, const char *v)
{
  sep(j, key);
  put_string(j->f, v);
}

void json_num(fd_json *j, const char *key, double v)
{
  sep(j, key);
  if (isfinite(v)) fprintf(j->f, "%.17g", v);
  else fputs("null", j->f);
}

void json_int(fd_json *j, const char *key, long long v)
{
  sep(j, key);
  fprintf(j->f, "%lld", v);
}

void json_bool(fd_json *j, const char *key, int v)
{
  sep(j, key);
  fputs(v ? "true" : "false", j->f);
}

void json_null(fd_json *j, const char *key)
{
  sep(j, key);
  fputs("null", j->f);
}
