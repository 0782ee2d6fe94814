// What the benchmarks share: fixed-point figures, nearest-rank percentiles, elapsed time, a
// fatal error naming the program, reading "--option value" arguments (and the options of a
// benchmark over a generated store), and power-law sampling.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::bench {

using Clock = std::chrono::steady_clock;

// `value` with exactly `decimals` digits after the point.
inline std::string fmt(double value, int decimals) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(decimals) << value;
    return out.str();
}

// The nearest-rank percentile (p from 0 to 1) of `v`; 0 for no values.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const auto at = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(at, v.size() - 1)];
}

inline double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// "<program>: <what>" on stderr, then exit status 1.
[[noreturn]] inline void fail(std::string_view program, const std::string& what) {
    std::cerr << program << ": " << what << "\n";
    std::exit(1);
}

// For a benchmark walking argv by hand: the value of the option at argv[i], moving i past it;
// with none, `usage` is printed and the program exits with status 2.
inline std::string option_value(int argc, char** argv, int& i, void (*usage)()) {
    if (i + 1 >= argc) {
        usage();
        std::exit(2);
    }
    return argv[++i];
}

// Walks argv: `while (args.next())` visits each argument as args.arg(); value() and number()
// take the option's value from the next argument, failing with a message when it is missing
// or (number) not a positive integer.
class Args {
public:
    Args(int argc, char** argv, std::string_view program)
        : argc_(argc), argv_(argv), program_(program) {}

    bool next() {
        if (++i_ >= argc_) return false;
        arg_ = argv_[i_];
        return true;
    }
    const std::string& arg() const { return arg_; }
    std::string value() {
        if (i_ + 1 >= argc_) fail(program_, arg_ + " needs a value");
        return argv_[++i_];
    }
    std::size_t number() {
        const auto text = value();
        char* end = nullptr;
        const auto n = std::strtoull(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0' || n == 0)
            fail(program_, arg_ + ": not a positive number: " + text);
        return static_cast<std::size_t>(n);
    }

private:
    int argc_;
    char** argv_;
    std::string_view program_;
    int i_ = 0;
    std::string arg_;
};

// The options of a benchmark over a generated store: its size, how many queries are timed and
// their match limit, the folder of its files and whether they are kept after.
struct StoreRunOptions {
    std::size_t triples = 1'000'000;
    std::size_t queries = 0;
    std::uint32_t limit = 100;
    std::filesystem::path dir = std::filesystem::temp_directory_path();
    bool keep = false;
};

// Takes args.arg() when it names one of StoreRunOptions (--triples N, --queries N, --limit N
// capped at `max_limit`, --dir PATH, --keep); false for any other argument.
inline bool take_store_run_option(Args& args, StoreRunOptions& o, std::uint32_t max_limit) {
    const std::string& arg = args.arg();
    if (arg == "--triples") {
        o.triples = args.number();
    } else if (arg == "--queries") {
        o.queries = args.number();
    } else if (arg == "--limit") {
        o.limit = static_cast<std::uint32_t>(std::min<std::size_t>(args.number(), max_limit));
    } else if (arg == "--dir") {
        o.dir = args.value();
    } else if (arg == "--keep") {
        o.keep = true;
    } else {
        return false;
    }
    return true;
}

// Reads every argument: StoreRunOptions' own, and any other through `take` (true when it took
// it). Nothing, or, once `usage` is printed for --help or an argument no one takes, the exit
// status of the program (0 and 2).
template <typename Take>
std::optional<int> read_store_run_options(int argc, char** argv, std::string_view program,
                                          StoreRunOptions& o, std::uint32_t max_limit, Take take,
                                          std::string_view usage) {
    Args args(argc, argv, program);
    while (args.next()) {
        if (take_store_run_option(args, o, max_limit) || take(args)) continue;
        std::cerr << usage;
        return args.arg() == "--help" ? 0 : 2;
    }
    return std::nullopt;
}

// At the end of a run: each of `paths` removed by `remove`, or with --keep, where they are.
template <typename Remove>
void remove_unless_kept(const StoreRunOptions& o, const std::vector<std::filesystem::path>& paths,
                        Remove remove) {
    if (!o.keep) {
        for (const auto& path : paths) remove(path);
        return;
    }
    std::cout << "kept ";
    for (std::size_t i = 0; i < paths.size(); ++i) std::cout << (i ? " and " : "") << paths[i];
    std::cout << "\n";
}

// Samples 0..n-1 with P(k) ∝ 1/(k+1)^exponent, through a shuffled rank so ids and degree do not
// line up.
class Zipf {
public:
    Zipf(std::size_t n, double exponent, std::mt19937_64& rng) : cdf_(n), rank_to_id_(n) {
        double sum = 0;
        for (std::size_t k = 0; k < n; ++k) {
            sum += 1.0 / std::pow(static_cast<double>(k + 1), exponent);
            cdf_[k] = sum;
        }
        for (auto& c : cdf_) c /= sum;
        for (std::size_t k = 0; k < n; ++k) rank_to_id_[k] = k;
        std::shuffle(rank_to_id_.begin(), rank_to_id_.end(), rng);
    }
    std::size_t operator()(std::mt19937_64& rng) {
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
        return rank_to_id_[std::min(static_cast<std::size_t>(it - cdf_.begin()), cdf_.size() - 1)];
    }

private:
    std::vector<double> cdf_;
    std::vector<std::size_t> rank_to_id_;
};

}  // namespace glassbox::bench
