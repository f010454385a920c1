// TrainState, checkpoint loading and store identities (see train_state.h).
#include "train/train_state.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <span>

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/log.h"
#include "features/features.h"
#include "train/run_record.h"

namespace fxt::train_detail {

namespace fs = std::filesystem;

namespace {

std::vector<int64_t> shape64(const std::vector<int>& s) {
  return {s.begin(), s.end()};
}

}  // namespace

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    fmt::format_to(std::back_inserter(s), "{}{}", i ? "," : "", v[i]);
  return s;
}

nlohmann::json stats_to_json(const FeatureStats& st) {
  nlohmann::json j;
  j["names"] = nlohmann::json::array();
  for (const char* n : feature_names()) j["names"].push_back(n);
  j["mean"] = st.mean;
  j["std"] = st.stddev;
  j["count"] = st.count;
  nlohmann::json dropped = nlohmann::json::array();
  for (int k = 0; k < kFeatureDim; ++k) {
    if (st.dropped[static_cast<size_t>(k)]) dropped.push_back(k);
  }
  j["dropped"] = std::move(dropped);
  return j;
}

Result<FeatureStats> stats_from_json(const nlohmann::json& j, const std::string& where) {
  FeatureStats st;
  try {
    const auto mean = j.at("mean").get<std::vector<double>>();
    const auto sd = j.at("std").get<std::vector<double>>();
    const auto count = j.at("count").get<std::vector<uint64_t>>();
    if (mean.size() != kFeatureDim || sd.size() != kFeatureDim || count.size() != kFeatureDim) {
      return InvalidInput("{}: feature_stats must hold {} values per field", where, kFeatureDim);
    }
    // Standardisation divides by std: a zero or non-finite value would write NaN everywhere.
    for (int k = 0; k < kFeatureDim; ++k) {
      const auto i = static_cast<size_t>(k);
      if (!std::isfinite(mean[i]) || !std::isfinite(sd[i]) || !(sd[i] > 0)) {
        return InvalidInput("{}: feature_stats slot {}: mean {} std {} (expected finite, std > 0)",
                            where, k, mean[i], sd[i]);
      }
    }
    std::copy(mean.begin(), mean.end(), st.mean.begin());
    std::copy(sd.begin(), sd.end(), st.stddev.begin());
    std::copy(count.begin(), count.end(), st.count.begin());
    for (int k : j.value("dropped", std::vector<int>{})) {
      if (k < 0 || k >= kFeatureDim) {
        return InvalidInput("{}: feature_stats.dropped holds slot {} (expected 0-{})", where, k,
                            kFeatureDim - 1);
      }
      st.dropped[static_cast<size_t>(k)] = true;
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: bad feature_stats section: {}", where, e.what());
  }
  return st;
}

Status TrainState::setup() {
  const int nh = static_cast<int>(cfg.horizons.size());
  // The one reset mechanism of the controllers (sigma, lambda, EMAs): every fresh run, and so
  // every fxt cv fold, starts from the freshly constructed state; only load() restores one.
  ctrl.reset();
  if (!perception()) return Status::Ok();  // a baseline-only run has no trained parameters
  params.assign(net.size(), 0.0f);
  grads.assign(net.size(), 0.0f);
  net.init(params.data(), cfg.seed);
  std::vector<model::ParamSpec> specs;
  std::vector<std::string> groups;
  for (const model::ModelParamSpec& s : net.specs()) {
    specs.push_back(s);
    groups.push_back(s.group);
  }
  FXT_RETURN_IF_ERROR(opt.add_params(params, grads, specs, groups));
  kendall = cfg.weighting == model::HorizonWeighting::kKendall;
  if (kendall) {
    log_sigma.assign(static_cast<size_t>(nh), 0.0f);
    dlog_sigma.assign(static_cast<size_t>(nh), 0.0f);
    model::ParamSpec ls;
    ls.name = "loss.log_sigma";
    ls.size = static_cast<size_t>(nh);
    ls.shape = {nh};
    FXT_RETURN_IF_ERROR(opt.add_params(log_sigma, dlog_sigma, {ls}, {"loss"}));
  }
  return Status::Ok();
}

Checkpoint TrainState::to_checkpoint() const { return to_checkpoint(params); }

Checkpoint TrainState::to_checkpoint(const std::vector<float>& model_params) const {
  Checkpoint ck;
  ck.config = cfg.to_json();
  ck.feature_stats = stats_to_json(stats);
  ck.controller = ctrl.to_json();
  if (perception()) opt.save_state(&ck);
  for (const model::ModelParamSpec& s : net.specs()) {
    ck.set_f32(s.name, shape64(s.shape),
               std::span<const float>(model_params).subspan(s.offset, s.size));
  }
  if (kendall) ck.set_f32("loss.log_sigma", {static_cast<int64_t>(log_sigma.size())}, log_sigma);
  nlohmann::json meta;
  baselines.save(&ck, &meta);
  meta["store_dirs"] = stores;
  meta["store_checksums"] = store_ids;
  meta["store_instruments"] = store_instruments;
  meta["base_rates"] = base_rates;
  meta["cfc_time_unit_ns"] = cfc_time_unit_ns;
  meta["epoch"] = epoch;
  meta["step"] = step;
  meta["best_epoch"] = best_epoch;
  meta["best_value"] = best_value;
  meta["bad_epochs"] = bad_epochs;
  meta["stopped"] = stopped;
  meta["model"] = model_kind_name(cfg.model);
  if (!logistic_start.empty()) meta["logistic_start"] = logistic_start.to_json();
  ck.meta = meta;
  return ck;
}

Status TrainState::load(const Checkpoint& ck) {
  {
    // The model's layout is fixed by the config; the baselines' tensors vary with their fit
    // (tree counts) and are checked by Baselines::load.
    Checkpoint model_part = ck;
    std::erase_if(model_part.tensors,
                  [](const NamedTensor& t) { return Baselines::is_baseline_tensor(t.name); });
    FXT_RETURN_IF_ERROR(check_compatible(to_checkpoint(), model_part));
  }
  for (const model::ModelParamSpec& s : net.specs()) {
    FXT_RETURN_IF_ERROR(ck.read_f32_into(s.name, shape64(s.shape),
                                         std::span<float>(params).subspan(s.offset, s.size)));
  }
  if (kendall) {
    const int64_t n = static_cast<int64_t>(log_sigma.size());
    FXT_RETURN_IF_ERROR(ck.read_f32_into("loss.log_sigma", std::vector<int64_t>{n}, log_sigma));
  }
  if (perception()) FXT_RETURN_IF_ERROR(opt.load_state(ck));
  FXT_ASSIGN_OR_RETURN(
      ctrl, ControllerState::from_json(ck.controller, static_cast<int>(cfg.horizons.size())));
  FXT_ASSIGN_OR_RETURN(stats, stats_from_json(ck.feature_stats, ck.source));
  try {
    const nlohmann::json& m = ck.meta;
    FXT_ASSIGN_OR_RETURN(baselines, Baselines::load(ck, m, static_cast<int>(cfg.horizons.size())));
    stores = m.at("store_dirs").get<std::vector<std::string>>();
    store_ids = m.value("store_checksums", std::vector<std::string>{});
    store_instruments = m.value("store_instruments", nlohmann::json::array());
    base_rates = m.at("base_rates").get<std::vector<double>>();
    cfc_time_unit_ns = m.value("cfc_time_unit_ns", 0.0);
    epoch = m.at("epoch").get<int>();
    step = m.at("step").get<int64_t>();
    best_epoch = m.at("best_epoch").get<int>();
    best_value = m.at("best_value").get<double>();
    bad_epochs = m.at("bad_epochs").get<int>();
    stopped = m.at("stopped").get<bool>();
    if (m.contains("logistic_start")) {
      FXT_ASSIGN_OR_RETURN(
          logistic_start,
          LogisticStart::from_json(m.at("logistic_start"), static_cast<int>(cfg.horizons.size()),
                                   net.config().features, ck.source, net.config().ple_bins));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidInput("{}: bad meta section: {}", ck.source, e.what());
  }
  if (base_rates.size() != cfg.horizons.size()) {
    return InvalidInput("{}: base_rates has {} values for {} horizons", ck.source,
                        base_rates.size(), cfg.horizons.size());
  }
  return Status::Ok();
}

// Reads a checkpoint and rebuilds the state it describes.
Result<std::unique_ptr<TrainState>> load_state(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(Checkpoint ck, read_checkpoint(path));
  FXT_ASSIGN_OR_RETURN(TrainConfig cfg, TrainConfig::from_json(ck.config));
  if (Status s = cfg.validate(); !s.ok()) {
    return InvalidInput("{}: bad config section: {}", path, s.message());
  }
  auto st = std::make_unique<TrainState>(cfg);
  FXT_RETURN_IF_ERROR(st->setup());
  if (Status s = st->load(ck); !s.ok()) return InvalidInput("{}", s.message());
  return st;
}

// The identity of each store: the CRC32 of its meta.json, which holds every column's CRC32
// (checked against the data on open), so a store replaced in place gets another identity.
nlohmann::json instrument_of(const nlohmann::json& store_meta) {
  const nlohmann::json inst = store_meta.value("instrument", nlohmann::json::object());
  return {{"symbol", inst.value("symbol", std::string())}, {"tick_px", inst.value("tick_px", 0)}};
}

void warn_if_other_instrument(const nlohmann::json& trained, const StoreReader& store,
                              const std::string& store_dir) {
  const nlohmann::json now = instrument_of(store.meta());
  if (trained.empty() || std::find(trained.begin(), trained.end(), now) != trained.end()) return;
  log_warn("{}: instrument {} (tick {}) differs from the training stores' ({} tick {}): the "
           "predictions may not mean what they meant in training",
           store_dir, now["symbol"].get<std::string>(),
           static_cast<double>(now["tick_px"].get<int64_t>()) * 1e-9,
           trained[0]["symbol"].get<std::string>(),
           static_cast<double>(trained[0]["tick_px"].get<int64_t>()) * 1e-9);
}

Result<std::vector<std::string>> store_identities(const std::vector<std::string>& dirs) {
  std::vector<std::string> ids;
  for (const std::string& d : dirs) {
    if (!fs::exists(d + "/meta.json")) return NotFound("{}: not a store (no meta.json)", d);
    FXT_ASSIGN_OR_RETURN(std::string id, file_checksum(d + "/meta.json"));
    ids.push_back(std::move(id));
  }
  return ids;
}

// Refuses a checkpoint whose stores were replaced since it was written (checkpoints from
// before store_checksums existed are not checked).
Status check_same_stores(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& recorded, const std::string& ckpt) {
  if (recorded.empty()) return Status::Ok();
  FXT_ASSIGN_OR_RETURN(const std::vector<std::string> now, store_identities(dirs));
  for (size_t i = 0; i < now.size() && i < recorded.size(); ++i) {
    if (now[i] != recorded[i]) {
      return InvalidInput(
          "{}: store changed since {} was written (meta.json {} then, {} now): it was replaced "
          "in place",
          dirs[i], ckpt, recorded[i], now[i]);
    }
  }
  return Status::Ok();
}

}  // namespace fxt::train_detail
