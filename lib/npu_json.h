/* SPDX-License-Identifier: MIT */
/*
 * npu_json.h - the one JSON string writer libnpu needs (the trace JSON);
 * libnpu has no JSON library dependency.
 */
#ifndef NPU_JSON_H
#define NPU_JSON_H

#include <stdio.h>

/*
 * Write s as a JSON string, quotes included: '"', '\\' and control
 * characters are escaped, valid UTF-8 is copied as is, and each byte that
 * is not part of a valid UTF-8 sequence (a name cut in the middle of a
 * character, Latin-1 text) becomes U+FFFD, so the output is always valid
 * JSON in UTF-8. A NULL s is written as "".
 */
void npu_json_put_string(FILE *f, const char *s);

#endif /* NPU_JSON_H */
