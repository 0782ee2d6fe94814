// `glassbox sparql 'QUERY'`: one SPARQL 1.1 query over the mirrored traces and collections
// (docs/sparql.md), sent straight to the configured engine; its results as an aligned table,
// or as the engine's JSON, CSV or TSV.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/settings.hpp"
#include "cli/sparql_settings.hpp"
#include "http/sparql_client.hpp"
#include "http/sparql_query_form.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

struct SparqlOptions {
    std::string query;
    std::string file;
    std::string format = "table";
    std::string home;
    int timeout_ms = 0;  // 0: sparql.timeout_ms
};

// A query file at most this large (a query is text a person wrote; the engine has its own bound).
constexpr std::uintmax_t kMaxQueryFileBytes = std::uintmax_t{1} << 20;
// A table cell longer than this is cut (the full text is in --format json, csv or tsv).
constexpr std::size_t kMaxCellChars = 80;

// The prefixes the table writes IRIs with (docs/vocabulary.md); no others, so a reader can
// always expand what it sees.
struct Prefix {
    std::string_view name;
    std::string_view iri;
};
constexpr Prefix kPrefixes[] = {
    {"prov:", "http://www.w3.org/ns/prov#"},
    {"gb:", "https://glassbox.dev/ns#"},
    {"rdf:", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"},
    {"rdfs:", "http://www.w3.org/2000/01/rdf-schema#"},
    {"xsd:", "http://www.w3.org/2001/XMLSchema#"},
    {"dcterms:", "http://purl.org/dc/terms/"},
};

std::string short_iri(const std::string& iri) {
    for (const auto& prefix : kPrefixes) {
        if (iri.starts_with(prefix.iri) && iri.size() > prefix.iri.size()) {
            std::string out(prefix.name);
            out.append(iri, prefix.iri.size());
            return out;
        }
    }
    std::string out = "<";
    out.append(iri).append(">");
    return out;
}

// A result term as the table shows it: IRIs shortened, blank nodes as _:id, literals as their
// text (a typed one's datatype left out: the column says what it is).
std::string cell_text(const json& term) {
    if (!term.is_object()) return "";
    const std::string value = term.value("value", "");
    const std::string type = term.value("type", "");
    std::string text = type == "uri" ? short_iri(value) : type == "bnode" ? "_:" + value : value;
    for (char& c : text) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    text = base::printable_utf8(text);
    if (text.size() > kMaxCellChars) {
        std::size_t cut = kMaxCellChars - 3;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text.resize(cut);
        text += "...";
    }
    return text;
}

// Display width of UTF-8 text: its code points (no East Asian wide forms in our data).
std::size_t width(const std::string& text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

void print_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
        line += cells[i];
        if (i + 1 < cells.size()) line.append(widths[i] - width(cells[i]) + 2, ' ');
    }
    std::cout << line << "\n";
}

// SPARQL 1.1 JSON results (a SELECT's bindings, or an ASK's boolean) as aligned columns.
void print_table(const json& results) {
    if (const auto answer = results.find("boolean");
        answer != results.end() && answer->is_boolean()) {
        std::cout << (answer->get<bool>() ? "true" : "false") << std::endl;
        return;
    }
    // The engine's answer is untrusted: members of the wrong type are read as empty.
    const json head = results.value("head", json::object());
    const json vars_json = head.is_object() ? head.value("vars", json::array()) : json::array();
    const json body = results.value("results", json::object());
    const json bindings = body.is_object() ? body.value("bindings", json::array()) : json::array();
    std::vector<std::string> vars;
    for (const auto& var : vars_json)
        if (var.is_string()) vars.push_back(var.get<std::string>());
    std::vector<std::vector<std::string>> rows;
    rows.reserve(bindings.size());
    for (const auto& binding : bindings) {
        std::vector<std::string> row;
        row.reserve(vars.size());
        for (const auto& var : vars)
            row.push_back(binding.contains(var) ? cell_text(binding[var]) : std::string{});
        rows.push_back(std::move(row));
    }
    std::vector<std::size_t> widths;
    widths.reserve(vars.size());
    for (const auto& var : vars) widths.push_back(width(var));
    for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
    print_row(vars, widths);
    for (const auto& row : rows) print_row(row, widths);
    std::cout << "(" << rows.size() << (rows.size() == 1 ? " row" : " rows") << ")" << std::endl;
}

// The query: the argument, or the file --file names.
std::string query_text(const SparqlOptions& options) {
    if (options.file.empty() == options.query.empty())
        exit_with_error(make_error(ErrorType::kInvalidRequest,
                                   "give the query as the argument or with --file, not both"));
    if (options.file.empty()) return options.query;
    std::error_code ec;
    const auto size = std::filesystem::file_size(options.file, ec);
    if (ec)
        exit_with_error(make_error(
            ErrorType::kNotFound,
            std::string("--file ").append(options.file).append(": ").append(ec.message())));
    if (size > kMaxQueryFileBytes)
        exit_with_error(make_error(
            ErrorType::kMessageTooLarge,
            std::string("--file ").append(options.file).append(" is larger than 1 MiB")));
    std::ifstream in(options.file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The result media type for `format` and the query's form: a graph (CONSTRUCT, DESCRIBE)
// shown as N-Triples in the table.
std::string_view accept_for(std::string_view format, http::SparqlForm form) {
    if (format == "csv") return http::kSparqlCsv;
    if (format == "tsv") return http::kSparqlTsv;
    if (format == "table" &&
        (form == http::SparqlForm::kConstruct || form == http::SparqlForm::kDescribe))
        return http::kNTriples;
    return http::kSparqlJson;
}

// What to do when no engine is configured (exit 2, as for any request that cannot be served as
// asked).
base::Error not_configured() {
    std::string message = "no SPARQL engine is configured: set sparql.engine = \"virtuoso\" in ";
    message.append(config_file_path(settings_home()).string())
        .append(
            " and run `glassbox up` (it starts Virtuoso in the home), or set sparql.endpoint "
            "to the query URL of an engine you run (docs/sparql.md)");
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

void run_sparql(const SparqlOptions& options) {
    const std::string text = query_text(options);
    auto config = sparql_config_from_settings();
    if (!config) exit_with_error(not_configured());
    if (options.timeout_ms > 0) config->timeout = std::chrono::milliseconds{options.timeout_ms};
    http::SparqlClient client(*config);
    const auto form = http::sparql_form(text);
    const auto accept = accept_for(options.format, form);
    auto result = client.query(text, accept);
    if (!result) exit_with_error(result.error());
    if (options.format != "table" || accept == http::kNTriples) {
        std::cout << result->body;
        if (!result->body.empty() && result->body.back() != '\n') std::cout << "\n";
        std::cout.flush();
        return;
    }
    const json parsed = json::parse(result->body, nullptr, false);
    if (!parsed.is_object() || (!parsed.contains("boolean") && !parsed.contains("results")))
        exit_with_error(make_error(ErrorType::kDecodeError,
                                   "the engine's answer is not SPARQL 1.1 JSON results"));
    print_table(parsed);
}

}  // namespace

void add_sparql_command(CLI::App& app) {
    auto [command, options] = add_command<SparqlOptions>(
        app, "sparql",
        "Ask the SPARQL engine a query over the mirrored traces and collections (docs/sparql.md)",
        run_sparql);
    command->add_option("query", options->query, "The query (SELECT, ASK, CONSTRUCT, DESCRIBE)");
    command->add_option("--file", options->file, "Read the query from this file");
    command->add_option("--format", options->format, "table (IRIs shortened), json, csv or tsv")
        ->capture_default_str()
        ->check(CLI::IsMember({"table", "json", "csv", "tsv"}));
    command->add_option("--home", options->home,
                        "Home folder (default $GLASSBOX_HOME, else ~/.glassbox)");
    command
        ->add_option("--timeout-ms", options->timeout_ms,
                     "The query's bound in milliseconds [default: sparql.timeout_ms]")
        ->check(CLI::Range(1, 3'600'000));
}

}  // namespace glassbox::cli
