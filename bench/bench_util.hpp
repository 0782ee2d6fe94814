// What the benchmarks share: fixed-point figures, nearest-rank percentiles, elapsed time, a
// fatal error naming the program, reading "--option value" arguments, and power-law sampling.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
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
