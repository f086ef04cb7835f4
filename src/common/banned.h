/* SPDX-License-Identifier: MIT */
/* Poisons functions that are unbounded or not thread-safe; included last by every .c of src/. */
#ifndef ROOST_BANNED_H
#define ROOST_BANNED_H
#pragma GCC poison sprintf strcpy strcat atoi atol gets strtok gmtime localtime asctime
#endif
