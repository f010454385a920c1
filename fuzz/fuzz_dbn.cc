// libFuzzer target for the DBN reader: any bytes, read as a DBN file and as a records-only
// fragment. The reader must not crash, read out of bounds or hang, and every failure must be
// a one-line message naming the input and a byte offset.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "data/dbn.h"

namespace {

constexpr const char* kName = "fuzz.dbn";

void check_error(const fxt::Status& s) {
  const std::string& m = s.message();
  if (s.ok() || m.rfind(std::string(kName) + ": offset ", 0) != 0 ||
      m.find('\n') != std::string::npos) {
    std::abort();
  }
}

void drain(const uint8_t* data, size_t size, uint8_t fragment_version) {
  auto r =
      fxt::dbn::Reader::open_memory(kName, data, size, fxt::dbn::ReaderOptions{fragment_version});
  if (!r.ok()) {
    check_error(r.status());
    return;
  }
  fxt::dbn::RecordRef rec;
  volatile uint64_t sink = 0;
  while (r->next(&rec)) {
    const auto* p = reinterpret_cast<const uint8_t*>(rec.header);
    sink = sink + p[rec.size() - 1];  // the whole record must be readable
    if (rec.rtype() == fxt::dbn::kRTypeDefinition) {
      auto def = r->decode_definition(rec);
      if (def.ok()) {
        sink = sink + def->raw_symbol.size();
      } else {
        check_error(def.status());
      }
    }
  }
  if (!r->status().ok()) check_error(r->status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  drain(data, size, 0);
  drain(data, size, static_cast<uint8_t>(1 + size % 3));
  return 0;
}
