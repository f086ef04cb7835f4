/* SPDX-License-Identifier: MIT */
/* libroost, the Roost agent SDK: include this one header. Link with -lroost (pkg-config roost). */
#ifndef ROOST_H
#define ROOST_H

#include "roost/roost_agent.h"
#include "roost/roost_client.h"
#include "roost/roost_error.h"
#include "roost/roost_token.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of these headers. */
#define ROOST_SDK_VERSION_MAJOR 0
#define ROOST_SDK_VERSION_MINOR 1
#define ROOST_SDK_VERSION_PATCH 0

/* Version of the library actually loaded ("0.1.0"); compare with the macros above to detect a
 * header/library mismatch. Never NULL. */
ROOST_EXPORT const char *roost_version(void);

#ifdef __cplusplus
}
#endif
#endif
