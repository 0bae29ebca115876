/* json.h - a small streaming JSON writer (objects, arrays, strings, numbers); non-finite
 * numbers are written as null, and each byte of a string (key or value) that is not valid
 * UTF-8 as \ufffd, so the output is valid JSON whatever bytes the strings hold. */
#ifndef FDMINI_JSON_H
#define FDMINI_JSON_H

#include <stdio.h>

typedef struct {
  FILE *f;
  int depth;
  int count[32];   /* members written at each depth */
  char closer[32]; /* '}' or ']' closing each depth */
} fd_json;

void json_open(fd_json *j, FILE *f);   /* begins the top-level object */
void json_close(fd_json *j);           /* ends it, newline */
void json_object(fd_json *j, const char *key);
void json_array(fd_json *j, const char *key);
void json_end(fd_json *j);             /* ends the innermost object or array */
void json_str(fd_json *j, const char *key, const char *v);
void json_num(fd_json *j, const char *key, double v);
void json_int(fd_json *j, const char *key, long long v);
void json_bool(fd_json *j, const char *key, int v);
void json_null(fd_json *j, const char *key);

#endif
