// The lines a knowledge change prints, and the OS user name its trace records.
#include "cli/change_report.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "cli/progress.hpp"
#include "cli/render/trace_render.hpp"

namespace glassbox::cli {

std::string os_user_name() {
    // The password database first: $USER can be anything the caller's environment says.
    std::vector<char> buffer(16'384);
    passwd entry{};
    passwd* found = nullptr;
    if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
        found->pw_name && *found->pw_name) {
        return found->pw_name;
    }
    const char* user = std::getenv("USER");
    return user ? user : "";
}

namespace {

std::string facts(std::uint64_t n) { return with_commas(n) + (n == 1 ? " fact" : " facts"); }

std::string kept_note(std::uint64_t kept) {
    if (kept == 0) return "";
    return ", " + with_commas(kept) + " kept (another source states " +
           (kept == 1 ? "it)" : "them)");
}

}  // namespace

std::string change_report(const schema::KnowledgeChangeSummary& change,
                          const std::string& subject) {
    std::string out;
    if (change.kind == "replace") {
        for (const auto& s : change.sources) {
            out += "replaced " + render::safe_text(s.source, false) + ": " + facts(s.added) +
                   " added, " + with_commas(s.removed) + " removed, " + with_commas(s.unchanged) +
                   " unchanged" + kept_note(s.kept) + "\n";
        }
    } else {
        std::string what = change.kind.substr(change.kind.find('-') + 1);
        out += "forgot " + what + " " + render::safe_text(subject, false) + ": " +
               facts(change.facts_removed) + " removed" + kept_note(change.facts_kept);
        const auto others = change.removed_sources.size();
        if (change.kind == "forget-document" && others > 1) {
            out += ", " + with_commas(others - 1) + " chunks";
        }
        out += "\n";
    }
    if (!change.removed_listed) out += "(the trace lists the first 10,000 removed facts)\n";
    if (!change.trace.empty()) {
        const std::string safe = render::safe_text(change.trace, false);
        out += "trace: " + safe + "\n  glassbox traces show " + safe + "\n";
    }
    return out;
}

}  // namespace glassbox::cli
