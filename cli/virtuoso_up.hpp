// The SPARQL engine `glassbox up` runs when sparql.engine = "virtuoso" (docs/sparql.md): Virtuoso
// Open Source in <home>/virtuoso, supervised like the other children, on loopback ports.
#pragma once

#include <csignal>
#include <filesystem>
#include <optional>

#include "base/result.hpp"
#include "cli/process_supervisor.hpp"
#include "http/sparql_client.hpp"

namespace glassbox::cli {

// How long a starting Virtuoso may take to answer (a first start creates its database).
inline constexpr std::chrono::milliseconds kVirtuosoStartWait{60'000};

// Starts Virtuoso as the supervised child "virtuoso" (log <home>/logs/virtuoso.log): the ini in
// <home>/virtuoso for a free loopback SQL port and HTTP port sparql.port (0: a free one), waits
// until /sparql answers (kVirtuosoStartWait), then secures it (http::virtuoso::secure). Returns
// the configuration the processes `up` starts get (sparql.endpoint, graph_store, user, password),
// or nullopt when one of `stop_signals` came first. kInvalidRequest when virtuoso-t is not
// installed (install virtuoso-opensource), kTimeout naming the log when it does not answer.
base::Result<std::optional<http::SparqlConfig>> start_virtuoso(ProcessSupervisor& supervisor,
                                                               const std::filesystem::path& home,
                                                               const sigset_t& stop_signals);

}  // namespace glassbox::cli
