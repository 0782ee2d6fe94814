// Model prices (docs/traces.md, "Cost"): the costs.prices setting read into a table (by the
// trace collector at start-up and by the settings check), and the cost of a model call under it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::schema {

// One model's price per million tokens, in the table's currency.
struct ModelPrice {
    double input = 0;
    double output = 0;
    bool operator==(const ModelPrice&) const = default;
};

// The prices the trace collector computes costs with: model name (gb:model) → price.
struct PriceTable {
    std::map<std::string, ModelPrice, std::less<>> models;
    std::string currency = "USD";

    // The price of `model`, or null when it has none.
    const ModelPrice* find(std::string_view model) const;
    // What `input` and `output` tokens of `model` cost; nullopt when the model has no price
    // (unpriced: no cost, never 0).
    std::optional<double> cost(std::string_view model, std::int64_t input,
                               std::int64_t output) const;
    bool operator==(const PriceTable&) const = default;
};

// A model name in costs.prices is at most this many bytes, and the table at most this many models.
inline constexpr std::size_t kMaxPricedModelBytes = 256;
inline constexpr std::size_t kMaxPricedModels = 10'000;

// Reads costs.prices: a JSON object of model name → {"input": N, "output": N} (per million
// tokens; a missing one is 0; numbers ≥ 0). Empty text: no prices. Anything else is
// InvalidRequest naming the model at fault ("costs.prices: model \"gpt-4o\": input is not a
// number"), never quoting a value.
base::Result<PriceTable> parse_prices(std::string_view text, std::string currency = "USD");

// Why costs.prices `text` cannot be used, or nullopt (the settings' problem check).
std::optional<std::string> prices_problem(std::string_view text);

}  // namespace glassbox::schema
