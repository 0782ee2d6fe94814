// bench_router: the query router's decision time (rules, then the classifier) against the text
// pass that precedes it, measured in the same run (issue 18: a decision in at most 1 ms p50).
//
// Each round takes every question of a fixed mixed set, builds its features (the baseline: the
// tokenising pass the query worker makes anyway before routing) and routes them once. The
// decisions are split by the method that decided (rules or classifier): the questions are made
// with no collection signals, so the questions no text rule catches fall to the classifier.
// Printed: p50 / p90 / p99 in microseconds per method, the baseline's, and each method's p50 as a
// ratio of the baseline's p50, then whether the ≤ 1 ms p50 target is met.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "bench/run_facts.hpp"
#include "workers/query/router.hpp"

namespace {

using glassbox::bench::Clock;
using glassbox::bench::fmt;
using glassbox::bench::percentile;

constexpr std::string_view kProgram = "bench_router";
constexpr double kTargetUs = 1000.0;

// Questions of the shapes the quality sets hold: kg paths (underscored names, relation chains),
// HotpotQA-style bridge and comparison questions, and short questions no rule catches.
const std::vector<std::string> kQuestions = {
    "which country is the soccer team Some_Club based in ?",
    "the gender of some_king 's wife 's father ?",
    "what is the nationality of child of some_person ?",
    "What award did the author of the essay collection receive after the war in the north?",
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    "What happened to Skel Light in the Long Storm?",
    "Who founded Brenn Yard?",
    "why did it rain",
    "how tall is the tower",
    "name the river that flows past the old mill town",
    "Were Scott Derrickson and Ed Wood of the same nationality?",
    "what colour was the first flag",
};

double us_since(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void print_row(const std::string& name, const std::vector<double>& us, double baseline_p50) {
    const double p50 = percentile(us, 0.5);
    std::cout << name << ": n=" << us.size() << " p50 " << fmt(p50, 2) << " us, p90 "
              << fmt(percentile(us, 0.9), 2) << " us, p99 " << fmt(percentile(us, 0.99), 2)
              << " us";
    if (baseline_p50 > 0.0) std::cout << ", p50 " << fmt(p50 / baseline_p50, 2) << "x the baseline";
    std::cout << "\n";
}

}  // namespace

int main(int argc, char** argv) {
    std::size_t rounds = 2000;
    glassbox::bench::Args args(argc, argv, kProgram);
    while (args.next()) {
        if (args.arg() == "--rounds") {
            rounds = args.number();
        } else {
            glassbox::bench::fail(kProgram, "usage: bench_router [--rounds N]");
        }
    }

    const glassbox::query::Router router(glassbox::query::default_rules());
    std::vector<double> features_us, rules_us, classifier_us;
    std::size_t sink = 0;  // keeps the decisions observable so nothing is optimised away
    for (std::size_t round = 0; round < rounds; ++round) {
        for (const auto& question : kQuestions) {
            auto start = Clock::now();
            auto features = glassbox::query::question_features(question);
            features_us.push_back(us_since(start));
            features.signals_known = true;
            start = Clock::now();
            const auto decision = router.route(features);
            const double us = us_since(start);
            sink += decision.engine.size();
            if (decision.method == "rules") {
                rules_us.push_back(us);
            } else if (decision.method == "classifier") {
                classifier_us.push_back(us);
            }
        }
    }
    if (rules_us.empty() || classifier_us.empty()) {
        glassbox::bench::fail(kProgram,
                              "the question set no longer reaches both rules and classifier");
    }

    std::cout << "bench_router: " << kQuestions.size() << " questions x " << rounds
              << " rounds, load average " << glassbox::bench::load_average() << " (checksum "
              << sink << ")\n";
    const double baseline = percentile(features_us, 0.5);
    print_row("baseline (question_features)", features_us, 0.0);
    print_row("route, decided by rules", rules_us, baseline);
    print_row("route, decided by classifier", classifier_us, baseline);
    const bool met =
        percentile(rules_us, 0.5) <= kTargetUs && percentile(classifier_us, 0.5) <= kTargetUs;
    std::cout << "target: decision <= 1 ms p50 (rules and classifier): " << (met ? "met" : "MISSED")
              << "\n";
    return met ? 0 : 1;
}
