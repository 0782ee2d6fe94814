// The costs.prices reader and the cost of a model call (docs/traces.md, "Cost").
#include "schema/prices.hpp"

#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

namespace glassbox::schema {

namespace {

constexpr double kTokensPerPrice = 1'000'000.0;

base::Error bad(std::string why) {
    return base::make_error(base::ErrorType::kInvalidRequest, "costs.prices: " + std::move(why));
}

// The model name as a message shows it: quoted, cut to a sane length.
std::string named(const std::string& model) {
    return "model \"" + model.substr(0, 100) + (model.size() > 100 ? "…" : "") + "\"";
}

// One model's {"input": N, "output": N}.
base::Result<ModelPrice> read_price(const std::string& model, const nlohmann::json& value) {
    if (model.empty()) return bad("a model name is empty");
    if (model.size() > kMaxPricedModelBytes)
        return bad(named(model) + ": the name is longer than " +
                   std::to_string(kMaxPricedModelBytes) + " bytes");
    if (!value.is_object()) return bad(named(model) + ": not a table of input and output prices");
    ModelPrice price;
    for (const auto& [key, number] : value.items()) {
        double* slot = key == "input" ? &price.input : key == "output" ? &price.output : nullptr;
        if (slot == nullptr)
            return bad(named(model) + ": unknown key \"" + key.substr(0, 40) +
                       "\" (input and output are known)");
        if (!number.is_number()) return bad(named(model) + ": " + key + " is not a number");
        *slot = number.get<double>();
        if (!std::isfinite(*slot) || *slot < 0)
            return bad(named(model) + ": " + key + " is negative");
    }
    return price;
}

}  // namespace

const ModelPrice* PriceTable::find(std::string_view model) const {
    const auto found = models.find(model);
    return found == models.end() ? nullptr : &found->second;
}

std::optional<double> PriceTable::cost(std::string_view model, std::int64_t input,
                                       std::int64_t output) const {
    const ModelPrice* price = find(model);
    if (price == nullptr) return std::nullopt;
    return (static_cast<double>(input) * price->input +
            static_cast<double>(output) * price->output) /
           kTokensPerPrice;
}

base::Result<PriceTable> parse_prices(std::string_view text, std::string currency) {
    PriceTable table;
    table.currency = std::move(currency);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return table;
    const auto parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_discarded()) return bad("not JSON (a table of model = { input, output })");
    if (!parsed.is_object()) return bad("not a table of models");
    if (parsed.size() > kMaxPricedModels)
        return bad("more than " + std::to_string(kMaxPricedModels) + " models");
    for (const auto& [model, value] : parsed.items()) {
        auto price = read_price(model, value);
        if (!price) return price.error();
        table.models.emplace(model, *price);
    }
    return table;
}

std::optional<std::string> prices_problem(std::string_view text) {
    auto table = parse_prices(text);
    if (table) return std::nullopt;
    // The settings check names the key itself.
    constexpr std::string_view kKey = "costs.prices: ";
    std::string why = table.error().message;
    if (why.rfind(kKey, 0) == 0) why.erase(0, kKey.size());
    return why;
}

}  // namespace glassbox::schema
