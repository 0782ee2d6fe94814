// What `glassbox load rdf --replace` and `glassbox forget` print about a knowledge change: a line
// per replaced source or the retraction, then the change's trace (docs/knowledge.md).
#pragma once

#include <string>

#include "schema/messages.hpp"

namespace glassbox::cli {

// Who runs this command, as a change's trace names them: the OS user name ("" when unknown).
std::string os_user_name();

// "replaced file:///…: 3 facts added, 1 removed, 295 unchanged" per source, or "forgot source
// file:///…: 299 facts removed" (`subject` what was forgotten), then "trace: <iri>" and the
// command that shows it.
std::string change_report(const schema::KnowledgeChangeSummary& change,
                          const std::string& subject = {});

}  // namespace glassbox::cli
