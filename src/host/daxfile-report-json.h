/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * daxfile-report-json.h: a report (daxfile-report.h) as JSON
 */
#pragma once

#include <json-glib/json-glib.h>

#include "daxfile-report.h"

G_BEGIN_DECLS

/* The full status object (with "static" when the report has a static
 * state), or the check subset. */
JsonNode *daxfile_report_to_json(const DaxfileReport *report);
JsonNode *daxfile_report_check_to_json(const DaxfileReport *report);

G_END_DECLS
