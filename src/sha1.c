/*
 * sha1.c - SHA-1 (FIPS 180-4), only to name our Lua scripts the way
 * Redis does, so that EVALSHA can replace sending a script's body on
 * every call.  Not used for anything that needs collision resistance.
 */
#include "sha1.h"

#include <stdint.h>
#include <string.h>

static uint32_t
rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* Mix one 64-byte block into the state h[5]. */
static void
sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (size_t i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void
sha1_hex(const void *data, size_t n, char out[41])
{
	static const char hex[] = "0123456789abcdef";
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
	    0xc3d2e1f0 };
	const unsigned char *p = data;
	unsigned char last[128];
	uint64_t bits = (uint64_t)n * 8;
	size_t tail = n % 64, pad;

	for (size_t i = 0; i + 64 <= n; i += 64)
		sha1_block(h, p + i);
	/* The tail, a 1 bit, zeros, and the length: one or two blocks. */
	memset(last, 0, sizeof(last));
	memcpy(last, p + n - tail, tail);
	last[tail] = 0x80;
	pad = tail < 56 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		last[pad - 1 - i] = (unsigned char)(bits >> (8 * i));
	sha1_block(h, last);
	if (pad == 128)
		sha1_block(h, last + 64);
	for (size_t i = 0; i < 20; i++) {
		unsigned char byte = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
		out[2 * i] = hex[byte >> 4];
		out[2 * i + 1] = hex[byte & 15];
	}
	out[40] = '\0';
}
