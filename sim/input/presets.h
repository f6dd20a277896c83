/* presets.h: `preset: NAME` in a scenario (sim/input/presets.yaml,
 * compiled in): a device group, the model or a device's link takes the
 * preset's values for every key it does not give itself.
 *
 * Expansion works on the YAML tree before conversion, so each value then
 * goes through the loader's ordinary checks; values a preset filled in
 * carry the origin "preset NAME (dpsim presets)" in messages.  When some
 * preset was used, the scenario's stored text is the expanded tree written
 * out as YAML (scn_presets_emit), so a stored run keeps the values it ran
 * with whatever later edits the preset file gets.
 */
#ifndef DP_PRESETS_H
#define DP_PRESETS_H

#include "dp_common.h"
#include "yamltree.h"

#include <stdio.h>

/* Expand every `preset:` of doc (model, devices[], devices[].link) in
 * place; *used = how many were expanded.  DP_EINPUT naming the file
 * position for an unknown preset (with a did-you-mean) or a preset key that
 * is not a name; DP_ENOMEM. */
int scn_presets_expand(yt_doc *doc, const char *file, int *used, dp_err *err);
/* The tree of doc as YAML text (flow style, one top-level key a line),
 * dp_malloc'd; NULL when out of memory. */
char *scn_presets_emit(const yt_doc *doc);
/* `dpsim presets`: every preset, its values and sources. */
void scn_presets_print(FILE *out);

#endif
