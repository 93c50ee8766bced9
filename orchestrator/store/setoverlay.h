/* setoverlay.h — settings changed through the API (PUT /v1/policy), kept
 * in the state directory so that they survive a reload and a restart.
 *
 * The file holds the request fields as the API took them (the keys and
 * units of numaorchd.conf's [policy] section, plus mode, interval and
 * schedule), merged over every change since it was last dropped:
 *   {"format": "numaorch-settings", "version": 1,
 *    "settings": {"max_util": 85, "schedule": [...]}}
 * The daemon lays them over the configuration file and the command line
 * at start and at every reload (agents/numaorchd.c); the API reads them
 * into a config (api_settings_apply). Replaced atomically (fs.h).
 */
#ifndef NUMAORCH_SETOVERLAY_H
#define NUMAORCH_SETOVERLAY_H

#include <jansson.h>
#include <stddef.h>

#define SETOVERLAY_FILE "settings.json"

/* The settings object of the file in STATE_DIR: 0 with *OUT the caller's
 * (NULL when there is no file), or -errno / -EINVAL (malformed: ERR says
 * what and how to drop it). */
int setoverlay_load(const char *state_dir, json_t **out, char *err, size_t errsz);
/* The same from the trusted directory DFD (the engine's state directory). */
int setoverlay_load_at(int dfd, json_t **out, char *err, size_t errsz);
/* Write SETTINGS (an object; not taken) as the file in DFD, atomically. */
int setoverlay_save_at(int dfd, const json_t *settings);
/* Remove the file from DFD; 0 also when there was none. */
int setoverlay_remove_at(int dfd);
/* A new object: OLD's settings (may be NULL) with CHANGE's keys (but
 * "revision", which names a state, not a setting) replacing them. */
json_t *setoverlay_merge(const json_t *old, const json_t *change);

#endif
