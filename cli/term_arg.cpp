// Terms written on the command line, read by the parser the store uses.
#include "cli/term_arg.hpp"

#include <cctype>

#include "cli/client_options.hpp"
#include "loader/rdf_reader.hpp"

namespace glassbox::cli {

using base::ErrorType;
using base::make_error;

// A term as written on the command line: an N-Triples term (<iri>, "literal", "x"@en,
// "5"^^<datatype>, _:b), or — for convenience — a bare absolute IRI (scheme:rest, no spaces);
// with `literal_fallback`, any other bare text is a plain literal. Checked by the same parser
// the store uses, so what is accepted here is exactly what the store can match.
schema::Term parse_term_arg(const std::string& text, const char* option, bool literal_fallback) {
    std::string written = text;
    const bool looks_ntriples =
        !text.empty() && (text.front() == '<' || text.front() == '"' || text.rfind("_:", 0) == 0);
    if (!looks_ntriples) {
        const auto colon = text.find(':');
        const bool bare_iri = colon != std::string::npos && colon > 0 &&
                              text.find(' ') == std::string::npos &&
                              std::isalpha(static_cast<unsigned char>(text.front())) != 0;
        if (bare_iri) {
            written = "<" + text + ">";
        } else if (literal_fallback) {
            return schema::literal(text);
        }
    }
    auto parsed = loader::parse_nquads("<urn:glassbox:s> <urn:glassbox:p> " + written + " .\n");
    if (!parsed || parsed->size() != 1) {
        exit_with_error(
            make_error(ErrorType::kInvalidRequest,
                       std::string(option) + " '" + text + "' is not a valid RDF term" +
                           (parsed ? "" : " (" + parsed.error().message + ")") +
                           "; write <http://…> for an IRI, \"text\" or \"text\"@en for a literal"));
    }
    return (*parsed)[0].o;
}

}  // namespace glassbox::cli
