/* checkpoint_format.h - private to the checkpoint files of src/io (checkpoint_format.c,
 * checkpoint_writer.c, checkpoint_restart.c): the file format of a checkpoint (checkpoint.h
 * describes it) as the writer and the restart share it: the checksums' terms, the blocks of
 * the writers, the header's filling and checking, the listing of a directory and whole
 * reads and writes at an offset. The checksum terms are inline here: the writer and the
 * restart add one per value. */
#ifndef FDMINI_CHECKPOINT_FORMAT_H
#define FDMINI_CHECKPOINT_FORMAT_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "checkpoint.h"

#define CK_GOLDEN 0x9e3779b97f4a7c15ULL
#define CK_SALT_HIST 0x686973746f7279ULL

/* ---- checksums ---- */

/* splitmix64's finalizer: a bijection of the 64-bit words that mixes every input bit into
 * every output bit. */
static inline uint64_t ckpt_mix64(uint64_t z)
{
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t ckpt_value_bits(real_t x)
{
  if (sizeof(real_t) == 8) {
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
  }
  uint32_t b;
  memcpy(&b, &x, 4);
  return b;
}

/* The sum of the terms of count values at global indices g0, g0 + 1, ... (a run of a row). */
static inline uint64_t ckpt_hash_run(const real_t *v, long long count, long long g0, uint64_t salt)
{
  uint64_t sum = 0, key = (uint64_t)g0 * CK_GOLDEN + salt;
  for (long long i = 0; i < count; i++, key += CK_GOLDEN) sum += ckpt_mix64(ckpt_value_bits(v[i]) + key);
  return sum;
}

static inline uint64_t ckpt_field_salt(int f) { return (uint64_t)(f + 1) * 0x51ed270b27f1c3a5ULL; }

/* The block c of the split of N points over P (decomp_split) holding 0-based index g. */
static inline int ckpt_block_of(long long N, int P, long long g)
{
  const long long base = N / P, rem = N % P;
  return (int)(g < rem * (base + 1) ? g / (base + 1) : rem + (g - rem * (base + 1)) / base);
}

/* ---- names and files (the names themselves: output.c) ---- */

/* pread/pwrite of all len bytes at off: 0 or an errno (a read that ends early: EIO, flagged
 * in *short_read when given). Not Collective; synchronous; any thread. */
int ckpt_pread_all(int fd, void *buf, size_t len, off_t off, int *short_read);
int ckpt_pwrite_all(int fd, const void *buf, size_t len, off_t off);

/* The steps of the checkpoints in dir (final names), newest first, at most max of them, into
 * steps; *count all of them (may exceed max). With `clean` the temporary files there are
 * removed, but for `keep` (a resolved path, or NULL): the file --restart reads; only a caller
 * that holds dir's lock (ckpt_lock_dir) may clean: then no other run writes there, and they are
 * killed runs'. errno or 0. Not Collective; any thread (no MPI). */
int ckpt_list_dir(const char *dir, int clean, const char *keep, long long *steps, int max, int *count);

/* One run per checkpoint directory. Takes dir's lock: a POSIX write lock (fcntl F_SETLK) on
 * dir/FD_CHECKPOINT_LOCK, made if missing, into which it writes who holds it (pid, host, start
 * time). The system releases the lock when the process ends, however it ends; ckpt_unlock_dir
 * releases it and removes the file. *fd gets the descriptor that holds it, or -1 where the file
 * system takes no locks: *nolock then holds fcntl's errno (ENOLCK, ENOSYS, ...) and the caller
 * goes on without. FD_OK, or FD_ERR_USAGE with one line: another process holds it (the line
 * says who and why two runs may not share a directory), or it cannot be opened. Not
 * Collective; rank 0, which must keep no other descriptor of that file (closing one would
 * release the lock). */
int ckpt_lock_dir(const char *dir, int *fd, int *nolock);
void ckpt_unlock_dir(const char *dir, int fd);

/* ---- the header ---- */

/* The header of ck's checkpoint at `step` with hist_n values of the source record into *h:
 * the run, the layout's offsets and sizes, the build and the time, its checksum. Not
 * Collective; every writer computes it (the offsets). */
void ckpt_fill_header(const fd_checkpoints *ck, long long step, long long hist_n, fd_ckpt_header *h);

/* Rank 0: reads and checks the header of `path` (validity, compatibility with r, size). FD_OK;
 * FD_ERR_USAGE with *incompatible = 1 (the file belongs to another run: never skipped), or with
 * *incompatible = 0 (unreadable, truncated, corrupted: a directory's older one may do). Not
 * Collective. */
int ckpt_read_header(const char *path, const fd_ckpt_run *r, fd_ckpt_header *h, int *incompatible);

#endif
