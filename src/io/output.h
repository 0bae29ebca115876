/* output.h - output files that are complete or absent (output.c): every file fdmini writes
 * (--json, --dump, the snapshots and their XDMF) goes to a temporary name in the directory of
 * its final name and is renamed to the final name only after every write, the close and a
 * size check succeeded. A file under a final name is therefore either the previous one,
 * untouched, or the complete new one. The targets are checked before the run: a name that
 * exists must be a regular file (a FIFO, device, socket or directory is refused), its
 * directory must let us create files, and two outputs may not name one file.
 *
 * Temporary names are FINAL.PID.tmp (PID: rank 0's process id; output_tmp_name, the snapshots'
 * too), so that two runs never share one; a run killed by a signal can leave one behind, never
 * a file under a final name. snapshot.c and dump.c write through this file; it calls neither.
 * Write errors carry errno (SIGXFSZ is ignored by main.c, so a write past `ulimit -f` returns
 * EFBIG instead of killing the process). */
#ifndef FDMINI_OUTPUT_H
#define FDMINI_OUTPUT_H

#include <stddef.h>

#include "backend.h" /* real_t */
#include "options.h" /* FD_PATH_MAX, fd_options */

/* One output file: its option (for messages), final name and temporary name. Plain bytes, so
 * rank 0 can prepare it and broadcast it. */
typedef struct {
  char opt[16];                /* "--json", "--dump"; "" = no such output */
  char path[FD_PATH_MAX];      /* the final name, symbolic links and the directory resolved */
  char tmp[FD_PATH_MAX + 32];  /* the temporary name in the same directory */
} fd_output;

/* Checks the outputs of the run o before it starts and fills *json and *dump (opt "" where the
 * option is not given): each target is new or a regular file we may replace, in a directory
 * where we can create files (proved by creating and removing the temporary file); --json and
 * --dump name different files, neither a file the snapshots or the checkpoints write, nor the
 * --checkpoint-dir (existing or not), nor the checkpoint --restart PATH reads or one of the
 * directory it reads; --snapshot-dir exists or is
 * created, is writable, and holds nothing under a snapshot file name that is not a regular
 * file. *made_snapdir is 1 when this call created --snapshot-dir (for
 * output_remove_made_dir when the run then fails), else 0; a refusal here removes the
 * directory it created. `tag` (rank 0's pid) makes the temporary names. Rank 0 calls it; Not
 * Collective. FD_OK or FD_ERR_USAGE with one line. */
int output_check_run(const fd_options *o, long tag, fd_output *json, fd_output *dump, int *made_snapdir);

/* A run that fails or is refused after output_check_run leaves no directory behind that it
 * made and never wrote into: removes dir where made (output_check_run's *made_snapdir) and it
 * is still empty (rmdir: a directory that holds anything, a snapshot of this run or a file of
 * another, stays; one the user had is never made, so never removed). Not Collective (rank 0). */
void output_remove_made_dir(const char *dir, int made);

/* write() of all len bytes of buf to fd: 0, or the errno of the failure (a write that makes
 * no progress counts as ENOSPC). Retries EINTR. Not Collective. */
int output_write_all(int fd, const void *buf, size_t len);

/* Writes a block of a global grid into the raw file fd (real_t, x fastest, N[0] x N[1] x N[2]
 * values): the block's n[0] x n[1] x n[2] values start at `first` (its point (1,1,1)), row j of
 * plane k at first + sy*j + sz*k, and land at global row (start[1] + j, start[2] + k), x offset
 * start[0] (0-based interior indices). Rows that follow each other in the file go out in one
 * pwritev. Returns 0 or the errno of the failure. Not Collective; makes no MPI call (the
 * snapshot writer thread calls it). */
int output_write_block(int fd, const real_t *first, long long sy, long long sz, const int n[3],
                       const long long start[3], const long long N[3]);
/* The same with the grid starting at byte `base` of the file (a checkpoint's fields follow its
 * header). Not Collective; makes no MPI call. */
int output_write_block_at(int fd, long long base, const real_t *first, long long sy, long long sz,
                          const int n[3], const long long start[3], const long long N[3]);

/* FD_OK when the file `path` holds exactly `bytes` bytes, else FD_ERR_IO with one line naming
 * what (the option or "snapshot") and both sizes. Not Collective. */
int output_check_size(const char *what, const char *path, long long bytes);

/* The temporary name of the output file `final`: FINAL.TAG.tmp in its directory (tag: rank 0's
 * process id, the same on every rank), so that runs writing into one directory never share
 * one. Returns 0, or -1 when it does not fit tmp[len]. Pure. */
int output_tmp_name(const char *final, long tag, char *tmp, size_t len);

/* The snapshots' file names (snapshot.c writes them, output_check_run checks them): the
 * snapshot after `step` steps is snap_STEP.raw (STEP: six digits or more) in dir, or its base
 * name alone when dir is NULL; -1 when it does not fit out[len]. The XDMF file is
 * FD_SNAPSHOT_XDMF. Pure. */
int output_snapshot_name(const char *dir, long long step, char *out, size_t len);
#define FD_SNAPSHOT_XDMF "snapshots.xmf"
/* 1 when `base` is a name the snapshots use in their directory: snap_STEP.raw (STEP: digits),
 * snapshots.xmf, or a temporary name of either (NAME.DIGITS.tmp). Pure. */
int output_is_snapshot_name(const char *base);

/* The checkpoints' file names (checkpoint_writer.c writes them, output_check_run checks them): the
 * checkpoint of `step` is ckpt_STEP.fdmini in dir (STEP: ten digits or more), into out (len
 * bytes, cut short where it does not fit). 1 from output_is_checkpoint_name when `base` is
 * such a name (as output_checkpoint_path writes it for its step: ckpt_12.fdmini is not) or a
 * temporary name ckpt_STEP.fdmini.PID.tmp (STEP, PID: digits);
 * *step (may be NULL) gets STEP, *tmp (may be NULL) whether it is a temporary name. Pure. */
void output_checkpoint_path(char *out, size_t len, const char *dir, long long step);
int output_is_checkpoint_name(const char *base, long long *step, int *tmp);
/* The lock a run holds on its --checkpoint-dir (checkpoint_format.c, ckpt_lock_dir): a file of
 * that directory the checkpoints write too. */
#define FD_CHECKPOINT_LOCK ".fdmini.lock"

/* Writes buf (len bytes) to out->tmp: created new (O_EXCL), every byte written, closed, and
 * its size checked. On failure the temporary file is removed and the result is FD_ERR_IO with
 * one line ("--json: writing 'F' failed: No space left on device; 'F' is unchanged"). Not
 * Collective (the caller agrees). */
int output_write_file(const fd_output *out, const void *buf, size_t len);

/* Renames out->tmp to out->path (nothing to do when out->opt is ""): FD_OK or FD_ERR_IO. Not
 * Collective (rank 0). */
int output_commit(const fd_output *out);
/* Renames the temporary files of outs[0..n) (n <= 4) to their final names as one: where one
 * rename fails, the ones made before it are undone (an existing file is kept aside by a hard
 * link, "final.TAG.old", until every rename is made; a new one is removed), the temporary
 * files are removed, and the result is that rename's FD_ERR_IO. Where the file system refuses
 * the hard link the file cannot be put back, and that is all. Not Collective (rank 0). */
int output_commit_all(const fd_output *const *outs, int n);
/* Removes out->tmp if it exists (nothing to do when out->opt is ""). Not Collective (rank 0). */
void output_discard(const fd_output *out);

#endif
