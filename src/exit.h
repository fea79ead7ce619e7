/*
 * exit.h - every exit status redlock uses, named once (redlock(1), EXIT STATUS).
 *
 *   the command's own   the command ran and exited; 128+N when it was
 *                       killed by signal N (redlock then re-raises N)
 *   128+N               redlock was stopped by signal N while waiting
 *   -E value (1)        the lock was not obtained; release/extend with
 *                       a token that does not hold it
 *   0 / 1               status, break, stop: held or removed / free
 *   64  EXIT_USAGE      bad option, DURATION, URL, NAME or COMMAND
 *   69  EXIT_UNAVAILABLE  no server (or no quorum) answered usefully
 *   70  EXIT_INTERNAL   out of memory, a system call that cannot fail
 *   74  EXIT_IOERR      acquire's output could not be written (released)
 *   75  EXIT_LOST       the lock was lost while the command ran
 *   124 EXIT_TIMEOUT    --max-time ran out (as timeout(1))
 *   126 EXIT_NOEXEC     COMMAND found but not executable (as sh)
 *   127 EXIT_NOTFOUND   COMMAND not found (as sh)
 *
 * 64 to 75 are the sysexits(3) values of the same meaning.
 */
#ifndef REDLOCK_EXIT_H
#define REDLOCK_EXIT_H

#define EXIT_NOT_HELD 1
#define EXIT_USAGE 64
#define EXIT_UNAVAILABLE 69
#define EXIT_INTERNAL 70
#define EXIT_IOERR 74
#define EXIT_LOST 75
#define EXIT_TIMEOUT 124
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127
#define EXIT_SIGNAL_BASE 128

#endif
