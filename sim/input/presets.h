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
#include "scenario.h"
#include "yamltree.h"

#include <stdio.h>

/* What each expanded preset filled in, for `check`: "devices[0] (dc):
 * a100-80gb: kind gpu, memory 80GB, ...; the scenario's own: efficiency",
 * the first SCN_PRESET_NOTES_MAX, n_all in all (scenario.h). */
typedef struct scn_preset_notes {
    char *line[SCN_PRESET_NOTES_MAX];
    size_t n, n_all;
} scn_preset_notes;
void scn_preset_notes_free(scn_preset_notes *nt);

/* Expand every `preset:` of doc (model, devices[], devices[].link, wan[])
 * in place; *used = how many were expanded, notes (zeroed by the caller)
 * what they filled in.  DP_EINPUT naming the file position for an unknown
 * preset (with a did-you-mean) or a preset key that is not a name;
 * DP_ENOMEM. */
int scn_presets_expand(yt_doc *doc, const char *file, int *used, scn_preset_notes *notes, dp_err *err);
/* The tree of doc as YAML text (flow style, one top-level key a line),
 * dp_malloc'd; NULL when out of memory. */
char *scn_presets_emit(const yt_doc *doc);
/* `dpsim presets`: every preset, its values and sources. */
void scn_presets_print(FILE *out);

#endif
