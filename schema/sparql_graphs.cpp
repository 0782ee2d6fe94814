// Graph names of the SPARQL mirrors.
#include "schema/sparql_graphs.hpp"

namespace glassbox::schema {

namespace {

bool unreserved(unsigned char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

void append_percent_encoded(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (unreserved(c)) {
            out.push_back(ch);
            continue;
        }
        out.push_back('%');
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0x0F]);
    }
}

}  // namespace

std::string collection_graph_iri(std::string_view name) {
    std::string out(kCollectionGraphPrefix);
    append_percent_encoded(out, name);
    return out;
}

std::string skolem_iri(std::string_view label) {
    std::string out("urn:glassbox:bnode:");
    append_percent_encoded(out, label);
    return out;
}

}  // namespace glassbox::schema
