/*
 * slot.c - the hash slot of a key, as Redis Cluster computes it: the
 * CRC16 (XMODEM) of the key's hash tag, or of the whole key when it
 * has none, modulo 16384.  A hash tag is the part between the first
 * '{' and the first '}' after it, if that part is not empty.
 */
#include "slot.h"

#include <stdint.h>
#include <string.h>

/* CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0. */
static uint16_t
crc16(const char *s, size_t n)
{
	uint16_t c = 0;

	for (size_t i = 0; i < n; i++) {
		c ^= (uint16_t)((unsigned char)s[i] << 8);
		for (int b = 0; b < 8; b++)
			c = (uint16_t)(c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1);
	}
	return c;
}

/* The hash tag of key: sets *at and returns its length, or 0 when the
 * key has none. */
static size_t
tag_of(const char *key, size_t len, const char **at)
{
	const char *o = memchr(key, '{', len), *c;

	if (o == NULL)
		return 0;
	c = memchr(o + 1, '}', len - (size_t)(o + 1 - key));
	if (c == NULL || c == o + 1)
		return 0;
	*at = o + 1;
	return (size_t)(c - o - 1);
}

/* Does key have a hash tag? */
int
slot_has_tag(const char *key, size_t len)
{
	const char *at;

	return tag_of(key, len, &at) > 0;
}

/* The hash slot of key. */
unsigned
slot_of(const char *key, size_t len)
{
	const char *at = key;
	size_t n = tag_of(key, len, &at);

	return crc16(at, n > 0 ? n : len) % SLOT_COUNT;
}

/*
 * A hash tag of one to three letters and digits whose slot is `slot`:
 * written to tag (NUL-terminated), its length returned.  Every slot
 * has one; the search is at most 62 + 62^2 + 62^3 CRCs of three bytes,
 * and is needed only for keys with a '}' but no hash tag.
 */
size_t
slot_tag(unsigned slot, char tag[4])
{
	static const char alnum[] = "0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	const size_t k = sizeof(alnum) - 1;

	for (size_t len = 1; len <= 3; len++) {
		size_t total = len == 1 ? k : len == 2 ? k * k : k * k * k;

		for (size_t i = 0; i < total; i++) {
			size_t v = i;
			for (size_t j = 0; j < len; j++, v /= k)
				tag[j] = alnum[v % k];
			tag[len] = '\0';
			if (crc16(tag, len) % SLOT_COUNT == slot)
				return len;
		}
	}
	tag[0] = '\0';
	return 0;
}
