// Sources, tiers, derivation chain and fusion contributions of a routed answer.
#include "workers/query/answer_provenance.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "text/rank_fusion.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace explain = schema::explain;

constexpr std::string_view kChainSeparator = " > ";

// The winner's sources in order, each once, with its tier.
std::vector<std::pair<std::string, int>> sources_of(const EngineRun& run) {
    std::vector<std::pair<std::string, int>> out;
    std::set<std::string> seen;
    const auto add = [&](const std::string& source, int tier) {
        if (source.empty() || out.size() >= kMaxAnswerSources) return;
        if (!seen.insert(source).second) {
            // The same source again: keep the weakest tier seen (conservative).
            for (auto& [s, t] : out) {
                if (s == source && tier > t) t = tier;
            }
            return;
        }
        out.emplace_back(source, tier);
    };
    if (const auto c = run.final.find("citations");
        run.final.is_object() && c != run.final.end() && c->is_array()) {
        for (const auto& citation : *c) {
            if (!citation.is_object()) continue;
            std::string source = string_of(citation, "chunk");
            if (source.empty()) source = string_of(citation, "document");
            const auto tier = citation.find("tier");
            add(source, tier != citation.end() && tier->is_number_integer() ? tier->get<int>() : 0);
        }
    }
    if (out.empty()) {
        for (const auto& item : run.evidence.kept) add(item.source, item.tier);
    }
    if (out.empty() && run.final.is_object()) {
        if (const auto s = run.final.find("sources"); s != run.final.end() && s->is_array()) {
            for (const auto& source : *s) {
                if (source.is_string()) add(source.get<std::string>(), 0);
            }
        }
    }
    return out;
}

}  // namespace

std::string engine_step(const std::string& engine) {
    if (engine == "graph-rag") return "graph-rag:traversal";
    if (engine == "document-rag") return "document-rag:retrieval";
    if (engine == "agent") return "agent:react";
    return engine;
}

explain::AnswerProvenance answer_provenance(const RouteDecision& route,
                                            const std::vector<EngineRun>& runs,
                                            std::size_t winner) {
    explain::AnswerProvenance p;
    const EngineRun& won = runs.at(winner);
    p.engine = won.engine;
    std::string chain = "route:" + route.method;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (i > 0) chain += std::string(kChainSeparator) + "escalation";
        if (i != winner) continue;
        chain += std::string(kChainSeparator) + engine_step(runs[i].engine);
        const std::string model = string_of(runs[i].final, "model");
        if (!model.empty()) chain += std::string(kChainSeparator) + "llm:" + model;
    }
    chain += std::string(kChainSeparator) +
             "reflection:" + (runs.size() > 1 ? "best-of-" + std::to_string(runs.size()) : "kept");
    p.derivation_chain = std::move(chain);

    const auto sources = sources_of(won);
    // Fusion over every run that found sources: a source two engines agree on ranks higher.
    std::vector<text::Ranking> rankings;
    for (const auto& run : runs) {
        if (run.error) continue;
        text::Ranking ranking;
        for (const auto& [source, tier] : sources_of(run)) ranking.items.emplace_back(source, 0.0);
        if (!ranking.items.empty()) rankings.push_back(std::move(ranking));
    }
    std::map<std::string, double> fused;
    if (rankings.size() >= 2) {
        for (const auto& item : text::reciprocal_rank_fusion(rankings)) fused[item.id] = item.score;
    }
    for (const auto& [source, tier] : sources) {
        explain::AnswerSourceInfo info;
        info.source = source;
        info.data_tier = tier;
        info.engine = won.engine;
        if (const auto f = fused.find(source); f != fused.end()) info.fusion_score = f->second;
        p.sources.push_back(std::move(info));
    }
    p.aggregate_tier = explain::aggregate_tier(p.sources);
    return p;
}

json provenance_json(const explain::AnswerProvenance& provenance) {
    json derivation = json::array();
    std::string_view chain = provenance.derivation_chain;
    while (!chain.empty()) {
        const auto cut = chain.find(kChainSeparator);
        derivation.push_back(std::string(chain.substr(0, cut)));
        if (cut == std::string_view::npos) break;
        chain.remove_prefix(cut + kChainSeparator.size());
    }
    json sources = json::array();
    for (const auto& s : provenance.sources) {
        json source{{"source", s.source}, {"tier", s.data_tier}, {"engine", s.engine}};
        if (s.fusion_score) source["fusion_score"] = *s.fusion_score;
        sources.push_back(std::move(source));
    }
    return json{{"engine", provenance.engine},
                {"derivation", std::move(derivation)},
                {"aggregate_tier", provenance.aggregate_tier},
                {"sources", std::move(sources)}};
}

}  // namespace glassbox::query
