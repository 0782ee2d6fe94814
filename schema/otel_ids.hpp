// OpenTelemetry ids of glassbox runs (docs/traces.md, "OpenTelemetry export"): the W3C trace
// context ids a run's spans, its log lines and its sub-runs share, derived from the run's
// identifiers so that every process computes the same ones without asking anybody.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace glassbox::schema::otel {

// The OTel trace id (32 lowercase hex digits) of the trace whose top-level run has the session
// URI (or any URI built by explain::RunUris for it) `run_uri`: the run's UUID without its dashes,
// a random version-4 UUID being as random as W3C trace context asks. nullopt for a URI no
// RunUris built.
std::optional<std::string> trace_id_of(std::string_view run_uri);

// The OTel span id (16 lowercase hex digits, never all zeros) of the span of the run or step
// `iri` (a session URI or a step's PROV IRI): FNV-1a 64 of the IRI, so the same IRI gives the
// same span id in every process and every export.
std::string span_id_of(std::string_view iri);

// True for 32 lowercase hex digits, not all zeros (W3C trace context's trace-id).
bool valid_trace_id(std::string_view id) noexcept;

}  // namespace glassbox::schema::otel
