// rdf_count: prints how many statements glassbox's RDF reader finds in a file (for rapper -c).
#include <cstdio>
#include <cstring>
#include <string>

#include "loader/rdf_reader.hpp"

// Usage: rdf_count [--format F] [--lenient] [--dump] FILE
// Prints the statement count on stdout (--dump: the statements as N-Quads first, and each
// lenient-mode issue on stderr); exit 0, or 1 with the reader's error on stderr.
int main(int argc, char** argv) {
    glassbox::loader::RdfReadOptions options;
    const char* file = nullptr;
    bool dump = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            auto format = glassbox::loader::format_from_name(argv[++i]);
            if (!format) {
                std::fprintf(stderr, "%s\n", format.error().describe().c_str());
                return 2;
            }
            options.format = *format;
        } else if (std::strcmp(argv[i], "--dump") == 0) {
            dump = true;
        } else if (std::strcmp(argv[i], "--lenient") == 0) {
            options.lenient = true;
        } else {
            file = argv[i];
        }
    }
    if (file == nullptr) {
        std::fprintf(stderr, "usage: rdf_count [--format F] [--lenient] [--dump] FILE\n");
        return 2;
    }
    std::string text;
    auto stats = glassbox::loader::read_rdf(
        file, options,
        [&](std::span<const glassbox::schema::Triple> batch) {
            if (dump) {
                text.clear();
                glassbox::loader::write_nquads(batch, text);
                std::fwrite(text.data(), 1, text.size(), stdout);
            }
            return glassbox::base::Result<void>{};
        },
        [&](const glassbox::loader::RdfIssue& issue) {
            if (dump) std::fprintf(stderr, "%s\n", issue.describe().c_str());
        });
    if (!stats) {
        std::fprintf(stderr, "%s\n", stats.error().describe().c_str());
        return 1;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(stats->statements));
    return 0;
}
