/* json.c - streaming JSON writer (json.h). Keys are NULL inside arrays. */
#include <math.h>

#include "json.h"

/* The length (1..4) of the valid UTF-8 sequence that starts at s, or 0 where none does: a
 * continuation byte with no lead, 0xC0, 0xC1 and 0xF5..0xFF, a sequence cut short (by the
 * end of the string or a byte that does not continue it), an overlong form, a surrogate
 * (U+D800..U+DFFF) or a code point above U+10FFFF (RFC 3629). Reads no byte past the first
 * that does not fit, so never past the terminating NUL. Pure. */
static int utf8_length(const unsigned char *s)
{
  unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range: the first decides it */
  int n;
  if (s[0] < 0x80) return 1;
  if (s[0] < 0xC2) return 0;
  if (s[0] < 0xE0) n = 2;
  else if (s[0] < 0xF0) {
    n = 3;
    if (s[0] == 0xE0) lo = 0xA0;      /* below: overlong */
    else if (s[0] == 0xED) hi = 0x9F; /* above: a surrogate */
  } else if (s[0] < 0xF5) {
    n = 4;
    if (s[0] == 0xF0) lo = 0x90;      /* below: overlong */
    else if (s[0] == 0xF4) hi = 0x8F; /* above: past U+10FFFF */
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

/* s as a JSON string, so that the record stays valid JSON whatever bytes a path or an
 * environment variable holds: '"' and '\\' escaped, bytes below 0x20 as \u00XX, valid UTF-8
 * sequences copied as they are, and each byte of anything else (utf8_length) as U+FFFD, the
 * replacement character, written \ufffd. */
static void put_string(FILE *f, const char *s)
{
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  while (*p) {
    int n = utf8_length(p);
    if (n == 0) {
      fputs("\\ufffd", f);
      p++;
    } else if (*p == '"' || *p == '\\') {
      fprintf(f, "\\%c", *p++);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p++);
    } else {
      fwrite(p, 1, (size_t)n, f);
      p += n;
    }
  }
  fputc('"', f);
}

static void sep(fd_json *j, const char *key)
{
  if (j->count[j->depth]++) fputc(',', j->f);
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
  if (key) {
    put_string(j->f, key);
    fputs(": ", j->f);
  }
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
