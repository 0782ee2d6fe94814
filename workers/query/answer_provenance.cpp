// Sources, tiers, derivation chain and fusion contributions of a routed answer.
#include "workers/query/answer_provenance.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "text/rank_fusion.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace explain = schema::explain;

constexpr std::string_view kChainSeparator = " > ";

// A source of an answer: its tier and, when its citation said, its freshness.
struct CitedSource {
    std::string source;
    int tier = 0;
    std::string loaded_at;
    std::string date;
    std::optional<bool> stale;
};

// A citation's freshness fields (docs/knowledge.md §3) into `into`.
void read_freshness(const json& citation, CitedSource& into) {
    into.loaded_at = string_of(citation, "loaded_at");
    into.date = string_of(citation, "date");
    if (const auto s = citation.find("stale"); s != citation.end() && s->is_boolean())
        into.stale = s->get<bool>();
}

// The winner's sources in order, each once, with its tier.
std::vector<CitedSource> sources_of(const EngineRun& run) {
    std::vector<CitedSource> out;
    std::set<std::string> seen;
    const auto add = [&](const std::string& source, int tier) -> CitedSource* {
        if (source.empty() || out.size() >= kMaxAnswerSources) return nullptr;
        if (!seen.insert(source).second) {
            // The same source again: keep the weakest tier seen (conservative).
            for (auto& s : out) {
                if (s.source == source && tier > s.tier) s.tier = tier;
            }
            return nullptr;
        }
        out.push_back(CitedSource{source, tier, {}, {}, std::nullopt});
        return &out.back();
    };
    if (const auto c = run.final.find("citations");
        run.final.is_object() && c != run.final.end() && c->is_array()) {
        for (const auto& citation : *c) {
            if (!citation.is_object()) continue;
            std::string source = string_of(citation, "chunk");
            if (source.empty()) source = string_of(citation, "document");
            const auto tier = citation.find("tier");
            if (auto* added =
                    add(source,
                        tier != citation.end() && tier->is_number_integer() ? tier->get<int>() : 0))
                read_freshness(citation, *added);
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
        for (const auto& cited : sources_of(run)) ranking.items.emplace_back(cited.source, 0.0);
        if (!ranking.items.empty()) rankings.push_back(std::move(ranking));
    }
    std::map<std::string, double> fused;
    if (rankings.size() >= 2) {
        for (const auto& item : text::reciprocal_rank_fusion(rankings)) fused[item.id] = item.score;
    }
    for (const auto& cited : sources) {
        explain::AnswerSourceInfo info;
        info.source = cited.source;
        info.data_tier = cited.tier;
        info.engine = won.engine;
        info.loaded_at = cited.loaded_at;
        info.date = cited.date;
        info.stale = cited.stale;
        if (const auto f = fused.find(cited.source); f != fused.end())
            info.fusion_score = f->second;
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
        if (!s.loaded_at.empty()) source["loaded_at"] = s.loaded_at;
        if (!s.date.empty()) source["date"] = s.date;
        if (s.stale) source["stale"] = *s.stale;
        sources.push_back(std::move(source));
    }
    return json{{"engine", provenance.engine},
                {"derivation", std::move(derivation)},
                {"aggregate_tier", provenance.aggregate_tier},
                {"sources", std::move(sources)}};
}

}  // namespace glassbox::query
