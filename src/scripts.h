/*
 * scripts.h - the server-side Lua scripts (the files of src/lua/),
 * embedded by tools/luagen.sh into src/scripts.c, and what C needs to
 * know of their contract: which keys and arguments each takes, by name,
 * and what their replies mean.  Each script's header comment in
 * src/lua/ gives its KEYS, ARGV and replies in full.
 *
 * Adding a script: src/lua/NAME.lua with its --@keys and --@argv lines
 * (src/lua/README), then make: its lua_NAME, its enum script entry and
 * its keys are generated; add its SHA-1 to tests/unit.c.
 */
#ifndef REDLOCK_SCRIPTS_H
#define REDLOCK_SCRIPTS_H

/* One script: its file's name (no .lua) and its text. */
struct lua_script {
	const char *name, *text;
};

/* Every script, ending with { 0, 0 } (tests/unit.c checks their SHA-1). */
extern const struct lua_script lua_scripts[];


/*
 * The KEYS, ARGV and reply elements of each script, by name:
 * SCRIPT_KEYS_NAME (the letters of its keys, in order, as args_script()
 * sends them: k K, f fence, m meta, w wake, a waiting, h holders, H
 * hmeta, q xwait, x xwake, s stop, d stopped, o done), ARG_NAME_... for
 * args_put(), REPLY_NAME_... for reply_int() and reply_str().  Made by
 * tools/luagen.sh from each script's --@keys, --@argv and --@reply
 * lines, where they are named once.
 */
#include "script_args.h"

#define SCRIPT_KEYS_MAX 9

/* A script that args_script() sends: its text and the letters of its
 * keys (SCRIPT_KEYS_...), by enum script. */
struct script_entry {
	const char *text;
	char sha1[41];		/* of text, in hex: its EVALSHA name */
	char keys[SCRIPT_KEYS_MAX + 1];
};

/* Every enum script's entry (scripts.c, from the files of src/lua/). */
extern const struct script_entry script_table[SCRIPT_COUNT];

/*
 * The first element of an acquire script's array reply (acquire.lua,
 * acquire_any.lua, sh_acquire.lua; a bare integer reply is a grant's
 * fence).
 */
enum acquire_reply {
	ACQUIRE_BUSY = 0,		/* {0, pttl or ms} */
	ACQUIRE_GRANTED = 1,		/* {1, fence}: sh_acquire.lua's */
	ACQUIRE_INHERITED = 2,		/* {2, fence, token} re-entrant */
	ACQUIRE_SELF_SHARED = 3,	/* {3, 0} an inherited token holds
					 * it shared */
	ACQUIRE_FAILOVER_HELD = 4,	/* {4, ms left, ms since} */
	ACQUIRE_HELD_BACK = 5		/* {5, ms} --lock-delay, --replace */
};

/* The integer reply of the scripts that act for a token (renew.lua,
 * release.lua, release_done.lua, sh_renew.lua, sh_release.lua). */
enum token_reply {
	TOKEN_SHARED = -2,	/* held shared (exclusive scripts) */
	TOKEN_FREE = -1,	/* free, or not held by this token (shared) */
	TOKEN_OTHER = 0,	/* held by another token */
	TOKEN_DONE = 1,		/* renewed, released */
	TOKEN_STOP = 2,		/* renewed, and asked to stop (renew) */
	TOKEN_KEPT = 2		/* left to expire, --min-hold (release) */
};

#endif
