// bench_llm: the llm worker's handler (make_llm_handler, extractive provider) called in this
// process on graph-rag's requests for PathQuestion questions (issue 33): CPU per request and a
// digest of every reply, so an old and a new build are compared on the same requests.
//
// The requests are made as graph-rag makes them, from the KB's TSV (a topic entity's edges out,
// labels with spaces for underscores, ids e1..eN): extract-concepts; kg-edge-scoring of the
// topic's edges (at most --edges, graph-rag's edge_score_limit 30) with the concepts; for a
// question of 2 or more hops a second scoring of the best 3 objects' edges; kg-edge-reasoning and
// kg-synthesis of the best 10 (+ 5 of the second hop). They are built first (the replies give the
// concepts and the best edges), then run --rounds times in measure_requests(), which callgrind
// can count alone:
//   valgrind --tool=callgrind --toggle-collect='*measure_requests*' build/bench/bench_llm
// No embeddings service: kg-edge-scoring is lexical only (the built-in cosines are not run).
//
// Usage: bench_llm [--data DIR] [--questions N] [--edges N] [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/llm_service.hpp"
#include "workers/runtime/detail/slot_channel.hpp"
#include "workers/runtime/request_context.hpp"

namespace {

using namespace glassbox;
using nlohmann::json;

struct Options {
    std::string data = "/work/shared/data/kg-pathquestion";
    std::size_t questions = 50;
    std::size_t edges = 30;
    std::size_t rounds = 3;
};

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const std::string value = argv[i + 1];
        if (flag == "--data") {
            o.data = value;
        } else if (flag == "--questions") {
            o.questions = std::stoul(value);
        } else if (flag == "--edges") {
            o.edges = std::stoul(value);
        } else if (flag == "--rounds") {
            o.rounds = std::stoul(value);
        } else {
            throw std::invalid_argument("unknown option " + flag);
        }
    }
    return o;
}

std::string label(std::string name) {
    std::replace(name.begin(), name.end(), '_', ' ');
    return name;
}

struct Edge {
    std::string s, p, o;  // KB names
};

// Subject -> its edges, in the file's order.
std::map<std::string, std::vector<Edge>> read_kb(const std::string& path) {
    std::map<std::string, std::vector<Edge>> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        Edge e;
        if (std::getline(fields, e.s, '\t') && std::getline(fields, e.p, '\t') &&
            std::getline(fields, e.o, '\t'))
            out[e.s].push_back(std::move(e));
    }
    return out;
}

// Collects what the handler writes: the reply's frames, digested.
class Collector final : public runtime::detail::InlineOutput {
public:
    void take(bus::Messages& message) override {
        last.clear();
        for (const auto& frame : message) last.append(frame.to_string()).append(1, '\x1f');
    }
    bool serve_broker() noexcept override { return false; }
    std::string last;
};

class Driver {
public:
    Driver() {
        auto templates = llm::TemplateSet::builtin();
        if (!templates) throw std::runtime_error(templates.error().describe());
        llm::LlmServiceOptions options;
        options.embeddings_service.clear();
        handler_ = llm::make_llm_handler(
            std::make_shared<const llm::TemplateSet>(std::move(templates).value()),
            std::make_shared<llm::ExtractiveProvider>(), options);
    }
    // The reply's body (the last frame) to `body`.
    std::string run(const std::string& body, std::size_t n) {
        runtime::RequestMeta meta;
        meta.request_id = "bench-llm-" + std::to_string(n);
        meta.service = "llm";
        meta.deadline_ms = std::chrono::milliseconds{60'000};
        meta.deadline = runtime::Clock::now() + meta.deadline_ms;
        meta.client = "GBC01";
        runtime::detail::HandlerChannel channel(collector_);
        runtime::RequestContext context(
            std::move(meta), json(), "bench-llm", channel,
            []() -> bus::BusClient& { throw std::logic_error("bench_llm makes no calls"); }, body);
        handler_(context);
        context.finish_if_open(base::make_error(base::ErrorType::kInternal, "no reply"));
        return collector_.last;
    }

private:
    runtime::Handler handler_;
    Collector collector_;
};

std::string request(const std::string& name, std::map<std::string, std::string> variables) {
    schema::LlmRequest r;
    r.template_name = name;
    r.variables = std::move(variables);
    return schema::encode_text(r);
}

json reply_json(const std::string& frames) {
    const auto body = frames.substr(0, frames.size() - 1);
    const auto at = body.rfind('\x1f');
    auto decoded = schema::decode_text<schema::LlmResponse>(
        at == std::string::npos ? body : body.substr(at + 1));
    if (!decoded || !decoded->json) throw std::runtime_error("no JSON reply: " + frames);
    return *decoded->json;
}

// graph-rag's edges variable and the edges in the order scored best first (stable).
json edges_json(const std::vector<Edge>& edges) {
    json out = json::array();
    for (std::size_t i = 0; i < edges.size(); ++i)
        out.push_back({{"id", "e" + std::to_string(i + 1)},
                       {"s", label(edges[i].s)},
                       {"p", label(edges[i].p)},
                       {"o", label(edges[i].o)}});
    return out;
}

std::vector<Edge> best(const std::vector<Edge>& edges, const json& scored, std::size_t keep) {
    std::vector<std::pair<double, std::size_t>> ranked;
    for (std::size_t i = 0; i < edges.size(); ++i)
        ranked.emplace_back(scored["scores"][i]["score"].get<double>(), i);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Edge> out;
    for (std::size_t i = 0; i < ranked.size() && i < keep; ++i)
        out.push_back(edges[ranked[i].second]);
    return out;
}

// One question's requests, in graph-rag's order.
void add_question(Driver& driver, const json& q, const std::map<std::string, std::vector<Edge>>& kb,
                  std::size_t edge_limit, std::vector<std::string>& out) {
    const std::string question = q["question"];
    out.push_back(request("extract-concepts", {{"question", question}}));
    const std::string concepts = reply_json(driver.run(out.back(), out.size()))["concepts"].dump();
    const auto score = [&](const std::vector<Edge>& edges) {
        out.push_back(request(
            "kg-edge-scoring",
            {{"question", question}, {"concepts", concepts}, {"edges", edges_json(edges).dump()}}));
        return reply_json(driver.run(out.back(), out.size()));
    };
    std::vector<Edge> candidates;
    for (const auto& topic : q["topic_entities"]) {
        const auto it = kb.find(topic.get<std::string>());
        if (it == kb.end()) continue;
        for (const auto& e : it->second)
            if (candidates.size() < edge_limit) candidates.push_back(e);
    }
    if (candidates.empty()) return;
    auto kept = best(candidates, score(candidates), 10);
    if (q.value("hops", 1) >= 2) {
        std::vector<Edge> next;
        for (std::size_t i = 0; i < kept.size() && i < 3; ++i) {
            const auto it = kb.find(kept[i].o);
            if (it == kb.end()) continue;
            for (const auto& e : it->second)
                if (next.size() < edge_limit) next.push_back(e);
        }
        if (!next.empty()) {
            auto second = best(next, score(next), 5);
            kept.insert(kept.end(), second.begin(), second.end());
        }
    }
    const std::string kept_json = edges_json(kept).dump();
    out.push_back(request("kg-edge-reasoning", {{"question", question}, {"edges", kept_json}}));
    out.push_back(request("kg-synthesis", {{"question", question}, {"edges", kept_json}}));
}

std::uint64_t fnv1a(std::uint64_t h, const std::string& text) {
    for (const unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
    return h;
}

double thread_cpu_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// The measured loop (callgrind: --toggle-collect='*measure_requests*'): every request once;
// the replies' digest.
[[gnu::noinline]] std::uint64_t measure_requests(Driver& driver,
                                                 const std::vector<std::string>& requests) {
    std::uint64_t digest = 14695981039346656037ULL;
    for (std::size_t i = 0; i < requests.size(); ++i)
        digest = fnv1a(digest, driver.run(requests[i], i));
    return digest;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Options o = parse_options(argc, argv);
        const auto kb = read_kb(o.data + "/kb.tsv");
        Driver driver;
        std::vector<std::string> requests;
        std::ifstream questions(o.data + "/questions-dev.jsonl");
        std::size_t asked = 0;
        for (std::string line; asked < o.questions && std::getline(questions, line); ++asked)
            add_question(driver, json::parse(line), kb, o.edges, requests);
        std::vector<double> per_request_ms;
        std::uint64_t digest = 0;
        for (std::size_t round = 0; round < o.rounds; ++round) {
            const double start = thread_cpu_ms();
            const std::uint64_t d = measure_requests(driver, requests);
            per_request_ms.push_back((thread_cpu_ms() - start) /
                                     static_cast<double>(requests.size()));
            if (round > 0 && d != digest) throw std::runtime_error("replies differ between rounds");
            digest = d;
        }
        std::sort(per_request_ms.begin(), per_request_ms.end());
        std::cout << "bench_llm: " << asked << " questions, " << requests.size()
                  << " requests, replies digest " << std::hex << digest << std::dec
                  << ", thread CPU per request median " << per_request_ms[per_request_ms.size() / 2]
                  << " ms over " << o.rounds << " rounds\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bench_llm: " << e.what() << "\n";
        return 1;
    }
}
