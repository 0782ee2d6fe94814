// `glassbox forget source|fact|document`: retracts knowledge from a collection through the
// `store` service, each one transaction recorded as a knowledge change with its trace
// (docs/knowledge.md, "Changing and retracting knowledge").
#include <iostream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/change_report.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/settings.hpp"
#include "cli/term_arg.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

// A namespace of its own: the unity build puts this file beside other commands' anonymous
// namespaces.
namespace glassbox::cli::forget {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

struct ForgetOptions {
    ClientOptions client;
    std::string op;  // forget-source | forget-fact | forget-document
    std::string uri;
    std::string s, p, o;
    std::string graph;
};

// An IRI argument: `<iri>` or the bare IRI.
std::string iri_arg(const std::string& text, const char* what) {
    const schema::Term term = parse_term_arg(text, what, false);
    if (!term.is_iri())
        exit_with_error(
            make_error(ErrorType::kInvalidRequest, std::string(what) + " must be an IRI"));
    return term.as_iri().value;
}

// The request, and what it forgets as the report names it.
std::pair<json, std::string> request_body(const ForgetOptions& options) {
    json body{{"op", options.op},
              {"collection", settings().text("client.collection")},
              {"actor", os_user_name()}};
    if (options.op == "forget-fact") {
        schema::Triple fact{parse_term_arg(options.s, "subject", false),
                            parse_term_arg(options.p, "predicate", false),
                            parse_term_arg(options.o, "object", true), std::nullopt};
        if (!options.graph.empty()) fact.graph = iri_arg(options.graph, "--graph");
        body["fact"] = schema::encode(fact);
        std::string shown = schema::to_ntriples(fact.s) + " " + schema::to_ntriples(fact.p) + " " +
                            schema::to_ntriples(fact.o);
        if (fact.graph) shown += " <" + *fact.graph + ">";
        return {body, shown};
    }
    const std::string uri =
        iri_arg(options.uri, options.op == "forget-source" ? "the source" : "the document");
    body[options.op == "forget-source" ? "source" : "document"] = uri;
    return {body, uri};
}

void run_forget(const ForgetOptions& options) {
    const auto [body, subject] = request_body(options);
    const json reply = call_for_object(options.client, schema::services::kStore, body);
    if (options.client.json) {
        std::cout << dump_json(reply) << std::endl;
        return;
    }
    const auto change = decoded_or_exit<schema::KnowledgeChangeSummary>(reply);
    std::cout << change_report(change, subject) << std::flush;
}

ForgetOptions& add_forget(CLI::App& forget, const std::string& name, const std::string& help) {
    auto [command, options] = add_command<ForgetOptions>(forget, name, help, run_forget);
    options->op = "forget-" + name;
    if (name == "fact") {
        command->add_option("subject", options->s, "<iri>, a bare IRI or _:blank")->required();
        command->add_option("predicate", options->p, "<iri> or an IRI")->required();
        command
            ->add_option("object", options->o,
                         "<iri>, a bare IRI, \"literal\", \"text\"@lang, \"v\"^^<datatype>, "
                         "or other bare text (a plain literal)")
            ->required();
        command->add_option("--graph", options->graph,
                            "The fact's named graph (an IRI); without it, the default graph");
    } else {
        command->add_option("uri", options->uri, "Its URI (file:///… for a loaded file)")
            ->required();
    }
    add_setting_option(*command, "client.collection", "--collection");
    add_client_options(*command, options->client, 120'000);
    return *options;
}

}  // namespace
}  // namespace glassbox::cli::forget

namespace glassbox::cli {

void add_forget_command(CLI::App& app) {
    auto* forget = app.add_subcommand(
        "forget",
        "Retract knowledge from a collection: a source's facts, one fact, or a document with its "
        "chunks; each is one transaction, recorded as a trace (traces list --kind store)");
    forget->require_subcommand(1);
    forget::add_forget(*forget, "source",
                       "Remove every fact a source (a loaded file) provided that no other source "
                       "states, and the source");
    forget::add_forget(*forget, "fact",
                       "Remove one fact (S P O, in --graph G or the default graph), whatever its "
                       "sources");
    forget::add_forget(*forget, "document",
                       "Remove a document, its chunks (text, keyword and vector index) and the "
                       "facts only it or its chunks provided");
}

}  // namespace glassbox::cli
