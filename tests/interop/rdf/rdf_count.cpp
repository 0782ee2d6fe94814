// rdf_count: prints how many statements glassbox's RDF reader finds in a file (for rapper -c).
#include <cstdio>
#include <cstring>
#include <string>

#include "loader/rdf_reader.hpp"

// Usage: rdf_count [--format F] [--lenient] FILE
// Prints the statement count on stdout; exit 0, or 1 with the reader's error on stderr.
int main(int argc, char** argv) {
    glassbox::loader::RdfReadOptions options;
    const char* file = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            auto format = glassbox::loader::format_from_name(argv[++i]);
            if (!format) {
                std::fprintf(stderr, "%s\n", format.error().describe().c_str());
                return 2;
            }
            options.format = *format;
        } else if (std::strcmp(argv[i], "--lenient") == 0) {
            options.lenient = true;
        } else {
            file = argv[i];
        }
    }
    if (file == nullptr) {
        std::fprintf(stderr, "usage: rdf_count [--format F] [--lenient] FILE\n");
        return 2;
    }
    auto stats = glassbox::loader::read_rdf(
        file, options,
        [](std::span<const glassbox::schema::Triple>) { return glassbox::schema::Result<void>{}; });
    if (!stats) {
        std::fprintf(stderr, "%s\n", stats.error().describe().c_str());
        return 1;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(stats->statements));
    return 0;
}
