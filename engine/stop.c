/*
** stop.c -- the stop request of stop.h.
*/
#include "stop.h"

volatile sig_atomic_t hsi_stop_requested = 0;

void hsi_stop_request(void) { hsi_stop_requested = 1; }
void hsi_stop_clear(void) { hsi_stop_requested = 0; }
