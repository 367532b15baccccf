#!/usr/bin/env python3
"""Writes the RNTuple test fixtures with real ROOT, and ROOT's own reading of them as golden JSON.

    pip install root                                   # ROOT 6.40 from PyPI; also needs a C++ compiler
    python3 tests/data/generate.py                     # all fixtures: tests/data/<name>.root + <name>.json
    python3 tests/data/generate.py reals classes       # only some fixtures
    python3 tests/data/generate.py --corpus DIR        # tests/data/corpus/<stem>.json.gz for every DIR/*.root

The fixtures are written by C++ code declared to ROOT's interpreter (WRITERS_CXX below); user classes get a real
dictionary (rootcling + c++, in a temporary directory). The goldens come from a generic C++ dumper (DUMPER_CXX) that
reopens each file, creates every top-level field (projected ones included) from the on-disk descriptor, reads every
entry through ROOT and walks the value with the RField API. The JSON format is described in tests/data/README.md.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))

# User types of the fixtures (classes, enums); they get a dictionary from rootcling.
CLASSES_HXX = r'''
// User types of the fixtures; generate.py compiles a dictionary for them with rootcling.
#ifndef RNTUPLE_FIXTURE_TYPES
#define RNTUPLE_FIXTURE_TYPES

#include <Rtypes.h>
#include <ROOT/RVec.hxx>
#include <TObject.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

enum EPlain { kPlainA = 0, kPlainB = 7, kPlainC = 1000000 };
enum class EShade : std::uint8_t { kRed = 1, kGreen = 2, kBlue = 200 };
enum class ESigned : std::int16_t { kLow = -300, kZero = 0, kHigh = 300 };
enum class EWide : std::uint64_t { kSmall = 1, kHuge = 0xFFFFFFFFFFFFFFFFull };
enum class ETiny : std::int8_t { kMin = -128, kMax = 127 };

struct Base {
   std::int32_t fBaseInt = 0;
   float fBaseFloat = 0;
};

struct SecondBase {
   std::string fLabel;
};

struct Inner {
   std::int16_t fShort = 0;
   std::vector<std::string> fTags;
};

struct Derived : public Base, public SecondBase {
   double fDouble = 0;
   Inner fInner;
   std::vector<std::int32_t> fVec;
   std::array<float, 3> fArr{};
};

struct GrandChild : public Derived {
   std::uint8_t fByte = 0;
};

struct WithArrays {
   std::vector<float> fVec;
   std::array<std::int32_t, 4> fArr{};
   float fCArr[2][3] = {{0, 0, 0}, {0, 0, 0}};
   std::vector<std::array<std::uint16_t, 2>> fVecOfArr;
};

struct Transient {
   std::int32_t fKept = 0;
   std::int32_t fDropped = 0; //! transient: not stored
};

namespace fixture {
struct Outer {
   struct Nested {
      std::int64_t fX = 0;
      std::string fName;
   };
   Nested fNested;
   std::vector<Nested> fNestedVec;
};
} // namespace fixture

template <typename T, int N>
struct Templ {
   std::array<T, N> fData{};
};

struct WithMisc {
   EShade fShade = EShade::kRed;
   std::unique_ptr<Inner> fPtr;
   Double32_t fD32 = 0;
   std::map<std::string, std::int32_t> fMap;
   bool fFlag = false;
};

struct Empty {};

struct Point {
   float x = 0;
   float y = 0;
   std::int32_t id = 0;
   ClassDefNV(Point, 2)
};

/// Struct-of-arrays layout of Point (an experimental RNTuple feature of ROOT 6.40)
struct PointSoA {
   ROOT::RVec<float> x;
   ROOT::RVec<float> y;
   ROOT::RVec<std::int32_t> id;
   ClassDefNV(PointSoA, 2)
};

/// A class deriving from TObject, whose base RNTuple stores as a record of
/// fUniqueID and fBits
struct Tracked : public TObject {
   std::int32_t fCount = 0;
   ClassDefOverride(Tracked, 1)
};

/// Stored with the ROOT streamer (rntupleStreamerMode in the LinkDef)
struct StreamedThing {
   std::int32_t fA = 0;
   std::vector<double> fB;
};

/// Stored as a collection of std::int32_t through the collection proxy IntBagProxy (installed at run time)
struct IntBag {
   std::vector<std::int32_t> fItems;
};

#ifndef __ROOTCLING__
#include <TClass.h>
#include <TVirtualCollectionProxy.h>

/// Minimal vector-like collection proxy for IntBag: iterators are plain pointers into fItems
class IntBagProxy : public TVirtualCollectionProxy {
   IntBag *fBag = nullptr;

   static void CreateIterators(void *collection, void **beginArena, void **endArena, TVirtualCollectionProxy *)
   {
      auto &items = static_cast<IntBag *>(collection)->fItems;
      *beginArena = items.data();
      *endArena = items.data() + items.size();
   }
   static void *Next(void *iter, const void *end)
   {
      auto current = static_cast<std::int32_t **>(iter);
      if (*current >= *static_cast<std::int32_t *const *>(end))
         return nullptr;
      return (*current)++;
   }
   static void DeleteTwoIterators(void *, void *) {}

public:
   IntBagProxy() : TVirtualCollectionProxy(TClass::GetClass("IntBag")) {}
   IntBagProxy(const IntBagProxy &) : IntBagProxy() {}

   TVirtualCollectionProxy *Generate() const override { return new IntBagProxy(*this); }
   Int_t GetCollectionType() const override { return ROOT::kSTLvector; }
   ULong_t GetIncrement() const override { return sizeof(std::int32_t); }
   UInt_t Sizeof() const override { return sizeof(IntBag); }
   bool HasPointers() const override { return false; }
   TClass *GetValueClass() const override { return nullptr; }
   EDataType GetType() const override { return kInt_t; }
   void PushProxy(void *objectstart) override { fBag = static_cast<IntBag *>(objectstart); }
   void PopProxy() override { fBag = nullptr; }
   void *At(UInt_t idx) override { return &fBag->fItems[idx]; }
   void Clear(const char * = "") override { fBag->fItems.clear(); }
   UInt_t Size() const override { return fBag->fItems.size(); }
   void *Allocate(UInt_t n, bool) override
   {
      fBag->fItems.resize(n);
      return fBag;
   }
   void Commit(void *) override {}
   void Insert(const void *data, void *container, size_t size) override
   {
      auto items = static_cast<const std::int32_t *>(data);
      static_cast<IntBag *>(container)->fItems.insert(static_cast<IntBag *>(container)->fItems.end(), items,
                                                      items + size);
   }
   TStreamerInfoActions::TActionSequence *GetConversionReadMemberWiseActions(TClass *, Int_t) override
   {
      return nullptr;
   }
   TStreamerInfoActions::TActionSequence *GetReadMemberWiseActions(Int_t) override { return nullptr; }
   TStreamerInfoActions::TActionSequence *GetWriteMemberWiseActions() override { return nullptr; }
   CreateIterators_t GetFunctionCreateIterators(bool = true) override { return &CreateIterators; }
   CopyIterator_t GetFunctionCopyIterator(bool = true) override { return nullptr; }
   Next_t GetFunctionNext(bool = true) override { return &Next; }
   DeleteIterator_t GetFunctionDeleteIterator(bool = true) override { return nullptr; }
   DeleteTwoIterators_t GetFunctionDeleteTwoIterators(bool = true) override { return &DeleteTwoIterators; }
};

/// Gives IntBag its collection proxy (once per process)
inline void InstallIntBagProxy()
{
   auto cl = TClass::GetClass("IntBag");
   if (cl && !cl->GetCollectionProxy())
      cl->CopyCollectionProxy(IntBagProxy());
}
#endif

#endif
'''

# Dictionary selection; rntupleSoARecord / rntupleStreamerMode are RNTuple class attributes.
LINKDEF_H = r'''
#ifdef __CLING__
#pragma link C++ enum EPlain;
#pragma link C++ enum EShade;
#pragma link C++ enum ESigned;
#pragma link C++ enum EWide;
#pragma link C++ enum ETiny;
#pragma link C++ class Base+;
#pragma link C++ class SecondBase+;
#pragma link C++ class Inner+;
#pragma link C++ class Derived+;
#pragma link C++ class GrandChild+;
#pragma link C++ class WithArrays+;
#pragma link C++ class Transient+;
#pragma link C++ class fixture::Outer+;
#pragma link C++ class fixture::Outer::Nested+;
#pragma link C++ class Templ<std::int16_t, 3>+;
#pragma link C++ class WithMisc+;
#pragma link C++ class Empty+;
#pragma link C++ class Point+;
#pragma link C++ class IntBag+;
#pragma link C++ class Tracked+;
#pragma link C++ options=rntupleSoARecord(Point) class PointSoA+;
#pragma link C++ options=rntupleStreamerMode(true) class StreamedThing+;
// Compiled collection proxies; ROOT 6.40's interpreted (emulated) proxies crash on maps such as these
#pragma link C++ class std::multimap<std::int32_t, std::string>+;
#pragma link C++ class std::map<std::int32_t, std::vector<std::int32_t>>+;
#pragma link C++ class std::unordered_map<std::int32_t, float>+;
#pragma link C++ class std::map<std::string, Inner>+;
#pragma link C++ class std::map<std::string, std::int32_t>+;
#endif
'''

# Generic dumper: ROOT's reading of every entry of every RNTuple in a file, as golden JSON text.
DUMPER_CXX = r'''
#pragma clang diagnostic ignored "-Wundefined-inline"
#include <ROOT/RNTuple.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RPageStorageFile.hxx>
#include <ROOT/RField.hxx>
#include <ROOT/RFieldBase.hxx>
#include <TBufferFile.h>
#include <TClass.h>
#include <TDirectory.h>
#include <TFile.h>
#include <TKey.h>
#include <TList.h>
#include <TObject.h>

#include <cerrno>
#include <cstdint>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rntdump {

// RVariantField keeps the offset of the std::variant index and the function that decodes it private.
// The explicit-instantiation access rule of C++ lets us name them without touching ROOT.
template <typename Tag, typename Tag::type M>
struct Rob {
   friend typename Tag::type get(Tag) { return M; }
};
struct VariantTagOffset {
   using type = std::size_t ROOT::RVariantField::*;
   friend type get(VariantTagOffset);
};
struct VariantItemOffset {
   using type = std::size_t ROOT::RVariantField::*;
   friend type get(VariantItemOffset);
};
struct VariantGetTag {
   using type = std::uint8_t (*)(const void *, std::size_t);
   friend type get(VariantGetTag);
};
template struct Rob<VariantTagOffset, &ROOT::RVariantField::fTagOffset>;
template struct Rob<VariantItemOffset, &ROOT::RVariantField::fVariantOffset>;
template struct Rob<VariantGetTag, &ROOT::RVariantField::GetTag>;

/// Thrown when ROOT cannot give a value (streamer fields, invalid fields, unknown kinds)
struct Unchecked : std::runtime_error {
   using std::runtime_error::runtime_error;
};

inline void AppendJsonString(const std::string &s, std::string &out)
{
   out += '"';
   for (unsigned char c : s) {
      switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
         if (c < 0x20 || c == 0x7f) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
         } else {
            out += static_cast<char>(c);
         }
      }
   }
   out += '"';
}

template <typename T>
inline void AppendInt(T v, std::string &out)
{
   out += std::to_string(v);
}

inline void AppendHex32(const void *p, std::string &out)
{
   std::uint32_t bits;
   std::memcpy(&bits, p, 4);
   char buf[16];
   snprintf(buf, sizeof(buf), "\"0x%08x\"", bits);
   out += buf;
}

inline void AppendHex64(const void *p, std::string &out)
{
   std::uint64_t bits;
   std::memcpy(&bits, p, 8);
   char buf[24];
   snprintf(buf, sizeof(buf), "\"0x%016llx\"", static_cast<unsigned long long>(bits));
   out += buf;
}

/// Bytes as a JSON string of two hex digits each (how the tests print Binary values)
inline void AppendHexBytes(const char *p, std::size_t n, std::string &out)
{
   static const char digits[] = "0123456789abcdef";
   out += '"';
   for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(p[i]);
      out += digits[b >> 4];
      out += digits[b & 15];
   }
   out += '"';
}

inline bool StartsWith(const std::string &s, const char *prefix)
{
   return s.rfind(prefix, 0) == 0;
}

std::vector<ROOT::RFieldBase::RValue> Split(const ROOT::RFieldBase &f, const void *ptr)
{
   auto &mf = const_cast<ROOT::RFieldBase &>(f);
   auto value = mf.BindValue(std::shared_ptr<void>(const_cast<void *>(ptr), [](void *) {}));
   return f.SplitValue(value);
}

void Dump(const ROOT::RFieldBase &f, const void *ptr, std::string &out);

/// Leaf types, by their normalized type name. Returns false if `f` is not a fundamental / string leaf.
bool DumpLeaf(const ROOT::RFieldBase &f, const void *ptr, std::string &out)
{
   const std::string &t = f.GetTypeName();
   if (t == "bool") {
      out += *static_cast<const bool *>(ptr) ? "true" : "false";
   } else if (t == "char") {
      AppendInt(static_cast<int>(*static_cast<const char *>(ptr)), out);
   } else if (t == "std::byte") {
      AppendInt(static_cast<unsigned>(*static_cast<const unsigned char *>(ptr)), out);
   } else if (t == "std::int8_t") {
      AppendInt(static_cast<int>(*static_cast<const std::int8_t *>(ptr)), out);
   } else if (t == "std::uint8_t") {
      AppendInt(static_cast<unsigned>(*static_cast<const std::uint8_t *>(ptr)), out);
   } else if (t == "std::int16_t") {
      AppendInt(*static_cast<const std::int16_t *>(ptr), out);
   } else if (t == "std::uint16_t") {
      AppendInt(*static_cast<const std::uint16_t *>(ptr), out);
   } else if (t == "std::int32_t") {
      AppendInt(*static_cast<const std::int32_t *>(ptr), out);
   } else if (t == "std::uint32_t") {
      AppendInt(*static_cast<const std::uint32_t *>(ptr), out);
   } else if (t == "std::int64_t") {
      AppendInt(*static_cast<const std::int64_t *>(ptr), out);
   } else if (t == "std::uint64_t") {
      AppendInt(*static_cast<const std::uint64_t *>(ptr), out);
   } else if (t == "float") {
      AppendHex32(ptr, out);
   } else if (t == "double") {
      AppendHex64(ptr, out);
   } else if (t == "std::string") {
      AppendJsonString(*static_cast<const std::string *>(ptr), out);
   } else {
      return false;
   }
   return true;
}

void Dump(const ROOT::RFieldBase &f, const void *ptr, std::string &out)
{
   if (f.GetTraits() & ROOT::RFieldBase::kTraitInvalidField) {
      throw Unchecked("invalid field " + f.GetQualifiedFieldName() + " (" + f.GetTypeName() +
                      "): " + static_cast<const ROOT::RInvalidField &>(f).GetError());
   }
   if (dynamic_cast<const ROOT::RStreamerField *>(&f)) {
      // The bytes the writer stored are the object's streamer output
      // (RStreamerField::AppendImpl): stream the object ROOT read the same way.
      TClass *cl = TClass::GetClass(f.GetTypeName().c_str());
      if (!cl)
         throw Unchecked("ROOT-streamed field " + f.GetQualifiedFieldName() + " (" + f.GetTypeName() +
                         "): no class to stream the object with");
      TBufferFile buffer(TBuffer::kWrite);
      cl->Streamer(const_cast<void *>(ptr), buffer);
      AppendHexBytes(buffer.Buffer(), buffer.Length(), out);
      return;
   }
   if (dynamic_cast<const ROOT::RField<TObject> *>(&f)) {
      // ROOT sets kIsOnHeap and kNotDeleted in the bits of a TObject it
      // reads, and its writer masks them out: give the bits it writes.
      const auto *object = static_cast<const TObject *>(ptr);
      out += "{\"fUniqueID\":";
      AppendInt(object->GetUniqueID(), out);
      out += ",\"fBits\":";
      AppendInt(object->TestBits(~(TObject::kIsOnHeap | TObject::kNotDeleted)), out);
      out += '}';
      return;
   }
   if (auto card = dynamic_cast<const ROOT::RCardinalityField *>(&f)) {
      if (card->As32Bit())
         AppendInt(*static_cast<const std::uint32_t *>(ptr), out);
      else
         AppendInt(*static_cast<const std::uint64_t *>(ptr), out);
      return;
   }
   if (auto bits = dynamic_cast<const ROOT::RBitsetField *>(&f)) {
      const auto *words = static_cast<const unsigned long *>(ptr);
      const std::size_t nbits = sizeof(unsigned long) * 8;
      out += '[';
      for (std::size_t i = 0; i < bits->GetN(); ++i) {
         if (i)
            out += ',';
         out += ((words[i / nbits] >> (i % nbits)) & 1UL) ? "true" : "false";
      }
      out += ']';
      return;
   }
   if (auto var = dynamic_cast<const ROOT::RVariantField *>(&f)) {
      const std::size_t tagOffset = var->*get(VariantTagOffset());
      const std::size_t itemOffset = var->*get(VariantItemOffset());
      const unsigned tag = get(VariantGetTag())(ptr, tagOffset);
      if (tag == 0) {
         out += "null";
         return;
      }
      auto subfields = f.GetConstSubfields();
      if (tag > subfields.size())
         throw Unchecked("variant tag out of range in " + f.GetQualifiedFieldName());
      out += "{\"tag\":";
      AppendInt(tag - 1, out);
      out += ",\"value\":";
      Dump(*subfields[tag - 1], static_cast<const unsigned char *>(ptr) + itemOffset, out);
      out += '}';
      return;
   }
   if (dynamic_cast<const ROOT::REnumField *>(&f) || dynamic_cast<const ROOT::RAtomicField *>(&f)) {
      // Same memory as the underlying integer / item type
      Dump(*f.GetConstSubfields().at(0), ptr, out);
      return;
   }
   if (DumpLeaf(f, ptr, out))
      return;

   if (dynamic_cast<const ROOT::RNullableField *>(&f)) {
      auto items = Split(f, ptr);
      if (items.empty()) {
         out += "null";
      } else {
         Dump(items[0].GetField(), items[0].GetPtr<void>().get(), out);
      }
      return;
   }

   const auto structure = f.GetStructure();
   if (structure == ROOT::ENTupleStructure::kCollection || f.GetNRepetitions() > 0) {
      const std::string &t = f.GetTypeName();
      const bool isMap = StartsWith(t, "std::map<") || StartsWith(t, "std::unordered_map<") ||
                         StartsWith(t, "std::multimap<") || StartsWith(t, "std::unordered_multimap<");
      auto items = Split(f, ptr);
      out += '[';
      bool first = true;
      for (const auto &item : items) {
         if (!first)
            out += ',';
         first = false;
         if (isMap) {
            auto kv = Split(item.GetField(), item.GetPtr<void>().get());
            if (kv.size() != 2)
               throw Unchecked("map item is not a pair in " + f.GetQualifiedFieldName());
            out += '[';
            Dump(kv[0].GetField(), kv[0].GetPtr<void>().get(), out);
            out += ',';
            Dump(kv[1].GetField(), kv[1].GetPtr<void>().get(), out);
            out += ']';
         } else {
            Dump(item.GetField(), item.GetPtr<void>().get(), out);
         }
      }
      out += ']';
      return;
   }
   if (structure == ROOT::ENTupleStructure::kRecord) {
      auto items = Split(f, ptr);
      auto subfields = f.GetConstSubfields();
      if (items.size() != subfields.size())
         throw Unchecked("record " + f.GetQualifiedFieldName() + " (" + f.GetTypeName() + ") split into " +
                         std::to_string(items.size()) + " values for " + std::to_string(subfields.size()) +
                         " subfields");
      out += '{';
      bool first = true;
      for (const auto &item : items) {
         if (!first)
            out += ',';
         first = false;
         AppendJsonString(item.GetField().GetFieldName(), out);
         out += ':';
         Dump(item.GetField(), item.GetPtr<void>().get(), out);
      }
      out += '}';
      return;
   }
   throw Unchecked("no JSON mapping for field " + f.GetQualifiedFieldName() + " of type '" + f.GetTypeName() + "'");
}

/// Checks the connected field tree for parts ROOT cannot give a value for; returns a reason or "".
std::string FindUnreadable(const ROOT::RFieldBase &f)
{
   if (f.GetTraits() & ROOT::RFieldBase::kTraitInvalidField) {
      return "invalid field " + f.GetQualifiedFieldName() + " (" + f.GetTypeName() +
             "): " + static_cast<const ROOT::RInvalidField &>(f).GetError();
   }
   for (auto sub : f.GetConstSubfields()) {
      auto r = FindUnreadable(*sub);
      if (!r.empty())
         return r;
   }
   return "";
}

/// RVariantField asks TClass for the std::variant layout; without dictionaries for all alternatives there is none and
/// ROOT 6.40 dereferences a null pointer. Report that instead of crashing.
std::string CheckVariantLayouts(const ROOT::RNTupleDescriptor &desc, const ROOT::RFieldDescriptor &fdesc)
{
   if (fdesc.GetStructure() == ROOT::ENTupleStructure::kVariant && !TClass::GetClass(fdesc.GetTypeName().c_str())) {
      return "ROOT cannot create field " + desc.GetQualifiedFieldName(fdesc.GetId()) + " (" + fdesc.GetTypeName() +
             "): RVariantField needs the TClass of the std::variant for its memory layout, and there is none because "
             "an alternative type has no dictionary (ROOT 6.40 then dereferences a null TClass)";
   }
   for (const auto &child : desc.GetFieldIterable(fdesc)) {
      auto r = CheckVariantLayouts(desc, child);
      if (!r.empty())
         return r;
   }
   return "";
}

/// Entries above which a field's values are written run-length encoded ("values_rle")
constexpr ROOT::NTupleSize_t kRleThreshold = 100000;

/// Creates the top-level field `fdesc` from the on-disk descriptor, connects it to the page source and dumps all
/// its entries. The first character of the result says what follows: 'V' a JSON array of values, 'R' a JSON array
/// of [value, count] runs, 'U' the reason why ROOT cannot give the values.
std::string DumpField(ROOT::Internal::RPageSource &source, const ROOT::RNTupleDescriptor &desc,
                      const ROOT::RFieldDescriptor &fdesc)
{
   const auto nEntries = desc.GetNEntries();
   try {
      auto layoutProblem = CheckVariantLayouts(desc, fdesc);
      if (!layoutProblem.empty())
         return "U" + layoutProblem;
      ROOT::RCreateFieldOptions opts;
      opts.SetEmulateUnknownTypes(true);
      opts.SetReturnInvalidOnError(true);
      std::unique_ptr<ROOT::RFieldBase> field;
      if (fdesc.IsSoACollection() && fdesc.GetLinkIds().size() == 1) {
         // ROOT 6.40 cannot read into an SoA class yet; impose the equivalent std::vector of the record type
         const auto &itemDesc = desc.GetFieldDescriptor(fdesc.GetLinkIds()[0]);
         field = ROOT::Internal::CallFieldBaseCreate(fdesc.GetFieldName(), "std::vector<" + itemDesc.GetTypeName() + ">",
                                                     opts, &desc, fdesc.GetId())
                    .Unwrap();
      } else {
         field = fdesc.CreateField(desc, opts);
      }
      auto reason = FindUnreadable(*field);
      if (!reason.empty())
         return "U" + reason;
      field->SetOnDiskId(fdesc.GetId());
      ROOT::RFieldZero zero;
      ROOT::Internal::SetAllowFieldSubstitutions(zero, true);
      zero.Attach(std::move(field));
      ROOT::Internal::CallConnectPageSourceOnField(zero, source);
      auto connected = std::move(zero.ReleaseSubfields()[0]);
      reason = FindUnreadable(*connected);
      if (!reason.empty())
         return "U" + reason;
      auto value = connected->CreateValue();
      const bool rle = nEntries > kRleThreshold;
      std::string col = rle ? "R[" : "V[";
      std::string prev, cur;
      std::uint64_t runLength = 0;
      for (ROOT::NTupleSize_t i = 0; i < nEntries; ++i) {
         value.Read(i);
         if (!rle) {
            if (i)
               col += ',';
            Dump(*connected, value.GetPtr<void>().get(), col);
            continue;
         }
         cur.clear();
         Dump(*connected, value.GetPtr<void>().get(), cur);
         if (runLength > 0 && cur == prev) {
            ++runLength;
            continue;
         }
         if (runLength > 0)
            col += (col.size() > 2 ? ",[" : "[") + prev + "," + std::to_string(runLength) + "]";
         std::swap(prev, cur);
         runLength = 1;
      }
      if (runLength > 0)
         col += (col.size() > 2 ? ",[" : "[") + prev + "," + std::to_string(runLength) + "]";
      col += ']';
      return col;
   } catch (const std::exception &e) {
      return std::string("U") + e.what();
   }
}

bool WriteAll(int fd, const char *p, std::size_t left)
{
   while (left > 0) {
      ssize_t n = write(fd, p, left);
      if (n < 0 && errno == EINTR)
         continue;
      if (n <= 0)
         return false;
      p += n;
      left -= n;
   }
   return true;
}

/// Dumps the fields `fdescs[first...]` in a forked child so that a crash inside ROOT loses only the field being read.
/// Every result arrives through a pipe as an 8-byte length and the DumpField() string. Returns the results received;
/// if the child crashed, the last one is an 'U' result for the field it was reading.
std::vector<std::string> DumpFieldsIsolated(ROOT::Internal::RPageSource &source, const ROOT::RNTupleDescriptor &desc,
                                            const std::vector<const ROOT::RFieldDescriptor *> &fdescs,
                                            std::size_t first)
{
   int fds[2];
   if (pipe(fds) != 0)
      throw std::runtime_error("pipe() failed");
   fflush(stdout);
   fflush(stderr);
   pid_t pid = fork();
   if (pid < 0)
      throw std::runtime_error("fork() failed");
   if (pid == 0) {
      // No crash handlers of ROOT / cppyy in the child: a crash must simply end it
      for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS})
         signal(sig, SIG_DFL);
      close(fds[0]);
      for (std::size_t i = first; i < fdescs.size(); ++i) {
         std::string result = DumpField(source, desc, *fdescs[i]);
         std::uint64_t len = result.size();
         if (!WriteAll(fds[1], reinterpret_cast<const char *>(&len), sizeof(len)) ||
             !WriteAll(fds[1], result.data(), result.size()))
            _exit(3);
      }
      close(fds[1]);
      _exit(0);
   }
   close(fds[1]);
   std::string buffer;
   char buf[1 << 16];
   while (true) {
      ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR)
         continue;
      if (n <= 0)
         break;
      buffer.append(buf, n);
   }
   close(fds[0]);
   int status = 0;
   while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
   }
   std::vector<std::string> results;
   std::size_t pos = 0;
   while (pos + 8 <= buffer.size()) {
      std::uint64_t len;
      std::memcpy(&len, buffer.data() + pos, 8);
      if (pos + 8 + len > buffer.size())
         break;
      results.emplace_back(buffer.substr(pos + 8, len));
      pos += 8 + len;
   }
   if (first + results.size() < fdescs.size()) {
      if (WIFSIGNALED(status)) {
         results.emplace_back("UROOT crashed (signal " + std::to_string(WTERMSIG(status)) +
                              ") while creating or reading this field from the on-disk descriptor");
      } else {
         results.emplace_back("Uthe reading process failed (exit status " + std::to_string(WEXITSTATUS(status)) +
                              ") while reading this field");
      }
   }
   return results;
}

/// Appends `"entries":n,"fields":[...],"values":{...}` and, if needed, `"values_rle"` and `"unchecked"`
void DumpNTupleBody(ROOT::Internal::RPageSource &source, std::string &out)
{
   ROOT::RNTupleDescriptor desc = source.GetSharedDescriptorGuard()->Clone();
   out += "\"entries\":";
   AppendInt(desc.GetNEntries(), out);

   std::vector<const ROOT::RFieldDescriptor *> fdescs;
   for (const auto &fdesc : desc.GetTopLevelFields())
      fdescs.emplace_back(&fdesc);
   std::vector<std::string> results;
   while (results.size() < fdescs.size()) {
      auto more = DumpFieldsIsolated(source, desc, fdescs, results.size());
      for (auto &r : more)
         results.emplace_back(std::move(r));
   }

   std::string fields, values, runs, unchecked;
   for (std::size_t i = 0; i < fdescs.size(); ++i) {
      const auto &fdesc = *fdescs[i];
      if (!fields.empty())
         fields += ',';
      fields += "{\"name\":";
      AppendJsonString(fdesc.GetFieldName(), fields);
      fields += ",\"type\":";
      AppendJsonString(fdesc.GetTypeName(), fields);
      fields += '}';

      const std::string &result = results[i];
      std::string &target = (result[0] == 'V') ? values : (result[0] == 'R') ? runs : unchecked;
      if (!target.empty())
         target += ',';
      AppendJsonString(fdesc.GetFieldName(), target);
      target += ':';
      if (result[0] == 'U')
         AppendJsonString(result.substr(1), target);
      else
         target.append(result, 1, std::string::npos);
   }
   out += ",\"fields\":[" + fields + "],\"values\":{" + values + "}";
   if (!runs.empty())
      out += ",\"values_rle\":{" + runs + "}";
   if (!unchecked.empty())
      out += ",\"unchecked\":{" + unchecked + "}";
}

void DumpNTuple(const std::string &path, const ROOT::RNTuple &anchor, std::string &out)
{
   auto source = ROOT::Internal::RPageSourceFile::CreateFromAnchor(anchor);
   source->Attach();

   std::string name = path;
   auto slash = name.rfind('/');
   if (slash != std::string::npos)
      name = name.substr(slash + 1);

   out += "{\"path\":";
   AppendJsonString(path, out);
   out += ",\"name\":";
   AppendJsonString(name, out);
   out += ',';
   DumpNTupleBody(*source, out);

   // Linked attribute sets: each is an RNTuple of its own, read through ROOT's page source for the linked anchor
   std::string attrSets;
   {
      ROOT::RNTupleDescriptor desc = source->GetSharedDescriptorGuard()->Clone();
      for (const auto &attrDesc : desc.GetAttrSetIterable()) {
         if (!attrSets.empty())
            attrSets += ',';
         attrSets += "{\"name\":";
         AppendJsonString(attrDesc.GetName(), attrSets);
         attrSets += ",\"schema_version\":[";
         AppendInt(attrDesc.GetSchemaVersionMajor(), attrSets);
         attrSets += ',';
         AppendInt(attrDesc.GetSchemaVersionMinor(), attrSets);
         attrSets += "],";
         ROOT::Internal::RNTupleLink link;
         link.fLocator = attrDesc.GetAnchorLocator();
         link.fLength = attrDesc.GetAnchorLength();
         auto attrSource = source->OpenWithDifferentAnchor(link);
         attrSource->Attach();
         DumpNTupleBody(*attrSource, attrSets);
         attrSets += '}';
      }
   }
   if (!attrSets.empty())
      out += ",\"attribute_sets\":[" + attrSets + "]";
   out += '}';
}

void DumpDirectory(TDirectory &dir, const std::string &prefix, std::string &ntuples)
{
   TIter next(dir.GetListOfKeys());
   while (auto key = static_cast<TKey *>(next())) {
      const std::string className = key->GetClassName();
      const std::string keyName = key->GetName();
      if (className == "ROOT::RNTuple") {
         auto anchor = std::unique_ptr<ROOT::RNTuple>(key->ReadObject<ROOT::RNTuple>());
         if (!ntuples.empty())
            ntuples += ',';
         DumpNTuple(prefix + keyName, *anchor, ntuples);
      } else {
         TClass *cl = TClass::GetClass(className.c_str());
         if (cl && cl->InheritsFrom(TDirectory::Class())) {
            auto sub = dir.GetDirectory(keyName.c_str());
            if (sub)
               DumpDirectory(*sub, prefix + keyName + "/", ntuples);
         }
      }
   }
}

/// ROOT's reading of every RNTuple in the file, as golden JSON (see tests/data/README.md)
std::string DumpFile(const std::string &filePath, const std::string &displayName)
{
   std::unique_ptr<TFile> file(TFile::Open(filePath.c_str(), "READ"));
   if (!file || file->IsZombie())
      throw std::runtime_error("cannot open " + filePath);
   std::string ntuples;
   DumpDirectory(*file, "", ntuples);
   std::string out = "{\"file\":";
   AppendJsonString(displayName, out);
   out += ",\"ntuples\":[" + ntuples + "]}";
   return out;
}

} // namespace rntdump
'''

# Fixture writers, one function per fixture.
WRITERS_CXX = r'''
#pragma clang diagnostic ignored "-Wundefined-inline"
#include <ROOT/RField.hxx>
#include <ROOT/RFieldBase.hxx>
#include <ROOT/RField/RFieldSoA.hxx>
#include <ROOT/RNTupleAttrWriting.hxx>
#include <ROOT/RNTupleImporter.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleParallelWriter.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RVec.hxx>
#include <TDirectory.h>
#include <TFile.h>
#include <TFileMerger.h>
#include <TLorentzVector.h>
#include <TNamed.h>
#include <TTree.h>

#include <array>
#include <atomic>
#include <bitset>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace fixtures {

using ROOT::ENTupleColumnType;
using ROOT::RFieldBase;
using ROOT::RNTupleModel;
using ROOT::RNTupleWriteOptions;
using ROOT::RNTupleParallelWriter;
using ROOT::RNTupleWriter;

template <typename T>
T Pick(const std::vector<T> &v, std::size_t i)
{
   return v[i % v.size()];
}

inline float F32(std::uint32_t bits)
{
   float f;
   std::memcpy(&f, &bits, 4);
   return f;
}

inline double F64(std::uint64_t bits)
{
   double d;
   std::memcpy(&d, &bits, 8);
   return d;
}

/// splitmix64: deterministic pseudo-random numbers
struct Rng {
   std::uint64_t fState;
   explicit Rng(std::uint64_t seed) : fState(seed) {}
   std::uint64_t Next()
   {
      std::uint64_t z = (fState += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
   }
};

std::unique_ptr<TFile> Recreate(const std::string &path)
{
   std::unique_ptr<TFile> file(TFile::Open(path.c_str(), "RECREATE"));
   if (!file || file->IsZombie())
      throw std::runtime_error("cannot create " + path);
   return file;
}

/// Typed access to a value of the writer's default entry
template <typename T>
std::shared_ptr<T> Ptr(RNTupleWriter &writer, const std::string &name)
{
   return writer.GetModel().GetDefaultEntry().GetPtr<T>(name);
}

/// Pointers to the members of an untyped record in an entry
std::vector<void *> RecordItems(const ROOT::REntry &entry, const std::string &name)
{
   for (const auto &value : entry) {
      if (value.GetField().GetFieldName() != name)
         continue;
      std::vector<void *> result;
      for (const auto &item : value.GetField().SplitValue(value))
         result.push_back(item.GetPtr<void>().get());
      return result;
   }
   throw std::runtime_error("no record " + name);
}

/// Pointers to the members of an untyped record in the writer's default entry
std::vector<void *> RecordItems(RNTupleWriter &writer, const std::string &name)
{
   return RecordItems(writer.GetModel().GetDefaultEntry(), name);
}

/// Field name mapping for projections: replaces the prefix `fFrom` (the projected field) by `fTo` (the source)
struct PrefixMapping {
   std::string fFrom;
   std::string fTo;
   std::string operator()(const std::string &name) const { return fTo + name.substr(fFrom.size()); }
};

/// Field name mapping for projections onto a member of a collection of records
struct MemberMapping {
   std::string fProjected;
   std::string fCollection;
   std::string fMember;
   std::string operator()(const std::string &name) const
   {
      return name == fProjected ? fCollection : fCollection + "._0." + fMember;
   }
};

/// Adds a field created from a type name, optionally with explicit column representatives
void AddTyped(RNTupleModel &model, const std::string &name, const std::string &type,
              const RFieldBase::RColumnRepresentations::Selection_t &representatives = {})
{
   auto field = RFieldBase::Create(name, type).Unwrap();
   if (!representatives.empty())
      field->SetColumnRepresentatives(representatives);
   model.AddField(std::move(field));
}

// ------------------------------------------------------------------------------------------------------------------
// fundamentals
// ------------------------------------------------------------------------------------------------------------------

const std::vector<bool> kBools = {false, true, true, false, true};
const std::vector<char> kChars = {0, 'A', 'z', CHAR_MIN, CHAR_MAX, -1, '\n', ' '};
const std::vector<std::int8_t> kI8 = {0, -1, 1, INT8_MIN, INT8_MAX, 42, -42};
const std::vector<std::uint8_t> kU8 = {0, 1, UINT8_MAX, 128, 127, 42};
const std::vector<std::int16_t> kI16 = {0, -1, 1, INT16_MIN, INT16_MAX, 1000, -1000, 256};
const std::vector<std::uint16_t> kU16 = {0, 1, UINT16_MAX, 32768, 32767, 256};
const std::vector<std::int32_t> kI32 = {0, -1, 1, INT32_MIN, INT32_MAX, 123456789, -123456789, 65536};
const std::vector<std::uint32_t> kU32 = {0, 1, UINT32_MAX, 0x80000000u, 0xdeadbeefu, 65536};
const std::vector<std::int64_t> kI64 = {0, -1, 1, INT64_MIN, INT64_MAX, 0x123456789abcdef0ll, -(1ll << 53) - 1,
                                        4294967296ll};
const std::vector<std::uint64_t> kU64 = {0, 1, UINT64_MAX, 1ull << 63, 0xfedcba9876543210ull, (1ull << 53) + 1,
                                         4294967296ull};
const std::vector<std::uint32_t> kF32Bits = {
   0x00000000, // 0
   0x80000000, // -0
   0x3f800000, // 1
   0xbf800000, // -1
   0x7fc00000, // quiet NaN
   0xffc00001, // negative NaN with payload
   0x7f800000, // +inf
   0xff800000, // -inf
   0x00800000, // smallest normal
   0x00000001, // smallest denormal
   0x007fffff, // largest denormal
   0x807fffff, // negative denormal
   0x7f7fffff, // max
   0xff7fffff, // lowest
   0x34000000, // epsilon
   0x40490fdb, // pi
};
const std::vector<std::uint64_t> kF64Bits = {
   0x0000000000000000ull, // 0
   0x8000000000000000ull, // -0
   0x3ff0000000000000ull, // 1
   0xbff0000000000000ull, // -1
   0x7ff8000000000000ull, // quiet NaN
   0xfff8000000000001ull, // negative NaN with payload
   0x7ff0000000000000ull, // +inf
   0xfff0000000000000ull, // -inf
   0x0010000000000000ull, // smallest normal
   0x0000000000000001ull, // smallest denormal
   0x000fffffffffffffull, // largest denormal
   0x800fffffffffffffull, // negative denormal
   0x7fefffffffffffffull, // max
   0xffefffffffffffffull, // lowest
   0x3cb0000000000000ull, // epsilon
   0x400921fb54442d18ull, // pi
};
const std::vector<std::uint8_t> kBytes = {0, 1, 0x7f, 0x80, 0xff};

constexpr int kFundamentalEntries = 24;

/// One field per fundamental type, entry i holding value i of each type's list (cyclically)
void WriteFundamentalNTuple(TFile &file, const std::string &name, int compression)
{
   auto model = RNTupleModel::Create();
   auto b = model->MakeField<bool>("bool");
   auto c = model->MakeField<char>("char");
   auto i8 = model->MakeField<std::int8_t>("int8");
   auto u8 = model->MakeField<std::uint8_t>("uint8");
   auto i16 = model->MakeField<std::int16_t>("int16");
   auto u16 = model->MakeField<std::uint16_t>("uint16");
   auto i32 = model->MakeField<std::int32_t>("int32");
   auto u32 = model->MakeField<std::uint32_t>("uint32");
   auto i64 = model->MakeField<std::int64_t>("int64");
   auto u64 = model->MakeField<std::uint64_t>("uint64");
   auto f = model->MakeField<float>("float");
   auto d = model->MakeField<double>("double");
   auto byte = model->MakeField<std::byte>("byte");
   RNTupleWriteOptions options;
   options.SetCompression(compression);
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   for (int i = 0; i < kFundamentalEntries; ++i) {
      *b = Pick(kBools, i);
      *c = Pick(kChars, i);
      *i8 = Pick(kI8, i);
      *u8 = Pick(kU8, i);
      *i16 = Pick(kI16, i);
      *u16 = Pick(kU16, i);
      *i32 = Pick(kI32, i);
      *u32 = Pick(kU32, i);
      *i64 = Pick(kI64, i);
      *u64 = Pick(kU64, i);
      *f = F32(Pick(kF32Bits, i));
      *d = F64(Pick(kF64Bits, i));
      *byte = static_cast<std::byte>(Pick(kBytes, i));
      writer->Fill();
   }
}

/// Explicit column representations, and fields with two representations that switch between clusters
void WriteRepresentationNTuple(TFile &file, const std::string &name, int compression)
{
   using T = ENTupleColumnType;
   auto model = RNTupleModel::Create();
   AddTyped(*model, "int32_plain", "std::int32_t", {{T::kInt32}});
   AddTyped(*model, "int32_split", "std::int32_t", {{T::kSplitInt32}});
   AddTyped(*model, "uint16_plain", "std::uint16_t", {{T::kUInt16}});
   AddTyped(*model, "uint16_split", "std::uint16_t", {{T::kSplitUInt16}});
   AddTyped(*model, "int64_plain", "std::int64_t", {{T::kInt64}});
   AddTyped(*model, "uint64_split", "std::uint64_t", {{T::kSplitUInt64}});
   AddTyped(*model, "float_plain", "float", {{T::kReal32}});
   AddTyped(*model, "double_split", "double", {{T::kSplitReal64}});
   AddTyped(*model, "vec_index32", "std::vector<float>", {{T::kIndex32}});
   AddTyped(*model, "vec_splitindex32", "std::vector<float>", {{T::kSplitIndex32}});
   AddTyped(*model, "vec_index64", "std::vector<float>", {{T::kIndex64}});
   AddTyped(*model, "vec_splitindex64", "std::vector<float>", {{T::kSplitIndex64}});
   AddTyped(*model, "string_index32", "std::string", {{T::kIndex32, T::kChar}});
   AddTyped(*model, "string_splitindex64", "std::string", {{T::kSplitIndex64, T::kChar}});
   // Two representations each; the primary one alternates from cluster to cluster (see below)
   AddTyped(*model, "switch_float", "float", {{T::kReal32}, {T::kSplitReal32}});
   AddTyped(*model, "switch_int64", "std::int64_t", {{T::kSplitInt64}, {T::kInt64}});
   AddTyped(*model, "switch_vec", "std::vector<std::int32_t>", {{T::kSplitIndex64}, {T::kIndex32}});

   RNTupleWriteOptions options;
   options.SetCompression(compression);
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   auto &entry = writer->GetModel().GetDefaultEntry();
   const char *switching[] = {"switch_float", "switch_int64", "switch_vec"};
   for (int i = 0; i < 12; ++i) {
      if (i > 0 && i % 4 == 0) {
         writer->CommitCluster();
         for (auto fieldName : switching) {
            auto &field = const_cast<RFieldBase &>(writer->GetModel().GetConstField(fieldName));
            ROOT::Internal::RFieldRepresentationModifier::SetPrimaryColumnRepresentation(field, (i / 4) % 2);
         }
      }
      *entry.GetPtr<std::int32_t>("int32_plain") = Pick(kI32, i);
      *entry.GetPtr<std::int32_t>("int32_split") = Pick(kI32, i + 3);
      *entry.GetPtr<std::uint16_t>("uint16_plain") = Pick(kU16, i);
      *entry.GetPtr<std::uint16_t>("uint16_split") = Pick(kU16, i + 1);
      *entry.GetPtr<std::int64_t>("int64_plain") = Pick(kI64, i);
      *entry.GetPtr<std::uint64_t>("uint64_split") = Pick(kU64, i);
      *entry.GetPtr<float>("float_plain") = F32(Pick(kF32Bits, i));
      *entry.GetPtr<double>("double_split") = F64(Pick(kF64Bits, i));
      std::vector<float> v;
      for (int k = 0; k < i % 4; ++k)
         v.push_back(0.5f * i + k);
      *entry.GetPtr<std::vector<float>>("vec_index32") = v;
      *entry.GetPtr<std::vector<float>>("vec_splitindex32") = v;
      *entry.GetPtr<std::vector<float>>("vec_index64") = v;
      *entry.GetPtr<std::vector<float>>("vec_splitindex64") = v;
      *entry.GetPtr<std::string>("string_index32") = std::string(i % 5, 'a' + i);
      *entry.GetPtr<std::string>("string_splitindex64") = "entry " + std::to_string(i);
      *entry.GetPtr<float>("switch_float") = 1.5f * i - 4;
      *entry.GetPtr<std::int64_t>("switch_int64") = (i % 2 ? -1 : 1) * (std::int64_t(1) << (3 * i));
      std::vector<std::int32_t> sv;
      for (int k = 0; k < (i * 7) % 5; ++k)
         sv.push_back(i * 10 + k);
      *entry.GetPtr<std::vector<std::int32_t>>("switch_vec") = sv;
      writer->Fill();
   }
}

void WriteFundamentals(const std::string &path)
{
   auto file = Recreate(path);
   WriteFundamentalNTuple(*file, "Split", 505);
   WriteFundamentalNTuple(*file, "Plain", 0);
   WriteRepresentationNTuple(*file, "Reprs", 505);
   WriteRepresentationNTuple(*file, "ReprsPlain", 0);
}

// ------------------------------------------------------------------------------------------------------------------
// compression
// ------------------------------------------------------------------------------------------------------------------

/// Compressible and incompressible columns with small pages, so that some pages are stored compressed and some as is
void WriteCompressionNTuple(TFile &file, const std::string &name, int compression)
{
   auto model = RNTupleModel::Create();
   auto seq = model->MakeField<std::uint64_t>("seq");
   auto noise = model->MakeField<std::uint64_t>("noise");
   auto fnoise = model->MakeField<float>("fnoise");
   auto text = model->MakeField<std::string>("text");
   auto vec = model->MakeField<std::vector<std::uint16_t>>("vec");
   RNTupleWriteOptions options;
   options.SetCompression(compression);
   options.SetInitialUnzippedPageSize(64);
   options.SetMaxUnzippedPageSize(1024);
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   Rng rng(42);
   for (int i = 0; i < 400; ++i) {
      *seq = i;
      *noise = rng.Next();
      *fnoise = F32(static_cast<std::uint32_t>(rng.Next() >> 32) & 0x7f7fffffu);
      *text = (i % 50 < 25) ? "the same text again and again " + std::to_string(i % 3)
                            : std::to_string(rng.Next()) + std::to_string(rng.Next());
      vec->clear();
      for (unsigned k = 0; k < rng.Next() % 6; ++k)
         vec->push_back(static_cast<std::uint16_t>(rng.Next()));
      writer->Fill();
      if (i == 199)
         writer->CommitCluster();
   }
}

void WriteCompression(const std::string &path)
{
   auto file = Recreate(path);
   WriteCompressionNTuple(*file, "zstd", 505);
   WriteCompressionNTuple(*file, "zstd_level1", 501);
   WriteCompressionNTuple(*file, "lz4", 404);
   WriteCompressionNTuple(*file, "zlib", 101);
   WriteCompressionNTuple(*file, "lzma", 207);
   WriteCompressionNTuple(*file, "old", 301); // ROOT's old deflate implementation ("CS" chunks)
   WriteCompressionNTuple(*file, "none", 0);
}

/// One page of 20 MiB uncompressed per ntuple: its compression block has two chunks (at most 16 MiB - 1 each)
void WriteBigPage(const std::string &path)
{
   auto file = Recreate(path);
   const std::pair<const char *, int> algorithms[] = {{"zstd", 505}, {"zlib", 101}, {"lz4", 404}, {"lzma", 201}};
   for (auto [name, compression] : algorithms) {
      auto model = RNTupleModel::Create();
      auto big = model->MakeField<std::uint64_t>("big");
      RNTupleWriteOptions options;
      options.SetCompression(compression);
      options.SetMaxUnzippedPageSize(64 * 1024 * 1024);
      options.SetPageBufferBudget(256 * 1024 * 1024);
      auto writer = RNTupleWriter::Append(std::move(model), name, *file, options);
      const std::uint64_t n = 20 * 1024 * 1024 / 8;
      for (std::uint64_t i = 0; i < n; ++i) {
         *big = i >> 12;
         writer->Fill();
      }
   }
}

// ------------------------------------------------------------------------------------------------------------------
// reals
// ------------------------------------------------------------------------------------------------------------------

const std::vector<float> kHalfValues = {0.0f,     -0.0f,  1.0f,      -1.0f,         65504.0f,
                                        -65504.0f, 6.103515625e-05f, 5.9604645e-08f, F32(0x7f800000),
                                        F32(0xff800000), F32(0x7fc00000), 1.0f / 3, 1e10f, 1e-10f, 2049.0f, 0.1f};
const std::vector<float> kTruncValues = {0.0f,  -0.0f, 1.0f,     -1.0f,           3.14159265f,   F32(0x7f800000),
                                         F32(0xff800000), F32(0x7fc00000), FLT_MAX, FLT_MIN, F32(0x00000001),
                                         1.0f / 3, -123456.789f, 1e30f, 0.1f};
const std::vector<double> kDoubleAsFloatValues = {0.0,     -0.0,    1.0,       -1.0,  1.0 / 3, 1e300,
                                                  -1e300,  1e-300,  DBL_MAX,   F64(0x7ff8000000000000ull),
                                                  F64(0x7ff0000000000000ull), F64(0xfff0000000000000ull),
                                                  double(FLT_MAX), double(FLT_MIN), 1e-45, 0.1};

struct QuantSpec {
   const char *fName;
   int fBits;
   double fMin, fMax;
};
const QuantSpec kQuantSpecs[] = {{"quant1", 1, -1, 1},         {"quant8", 8, 0, 1},
                                 {"quant16", 16, -100, 100},   {"quant20", 20, -1e6, 1e6},
                                 {"quant32", 32, -1, 1},       {"quant12_asym", 12, -0.5, 1000},
                                 {"quant24_tiny", 24, 1e-6, 2e-6}};

/// Values within [min, max] for a quantised field, min and max included
double QuantValue(const QuantSpec &spec, int i)
{
   const double fractions[] = {0.0, 1.0, 0.5, 0.1, 0.9, 1.0 / 3, 0.999999, 0.000001, 0.25};
   const double fr = fractions[i % 9];
   if (fr == 0.0)
      return spec.fMin;
   if (fr == 1.0)
      return spec.fMax;
   return spec.fMin + fr * (spec.fMax - spec.fMin);
}

void WriteRealsNTuple(TFile &file, const std::string &name, int compression)
{
   using T = ENTupleColumnType;
   auto model = RNTupleModel::Create();
   {
      auto f = std::make_unique<ROOT::RField<float>>("half");
      f->SetHalfPrecision();
      model->AddField(std::move(f));
      auto d = std::make_unique<ROOT::RField<double>>("double_half");
      d->SetHalfPrecision();
      model->AddField(std::move(d));
   }
   for (int bits : {10, 11, 16, 20, 31}) {
      auto f = std::make_unique<ROOT::RField<float>>("trunc" + std::to_string(bits));
      f->SetTruncated(bits);
      model->AddField(std::move(f));
   }
   {
      auto d = std::make_unique<ROOT::RField<double>>("double_trunc14");
      d->SetTruncated(14);
      model->AddField(std::move(d));
   }
   for (const auto &spec : kQuantSpecs) {
      auto f = std::make_unique<ROOT::RField<float>>(spec.fName);
      f->SetQuantized(spec.fBits, {static_cast<float>(spec.fMin), static_cast<float>(spec.fMax)});
      model->AddField(std::move(f));
   }
   {
      auto d = std::make_unique<ROOT::RField<double>>("double_quant16");
      d->SetQuantized(16, {-10.0, 10.0});
      model->AddField(std::move(d));
   }
   AddTyped(*model, "double32", "Double32_t");
   AddTyped(*model, "double_as_real32", "double", {{T::kReal32}});
   AddTyped(*model, "double_as_splitreal32", "double", {{T::kSplitReal32}});
   {
      // reduced precision below a collection
      auto v = RFieldBase::Create("vec_half", "std::vector<float>").Unwrap();
      static_cast<ROOT::RField<float> *>(v->GetMutableSubfields()[0])->SetHalfPrecision();
      model->AddField(std::move(v));
      auto w = RFieldBase::Create("vec_quant", "std::vector<float>").Unwrap();
      static_cast<ROOT::RField<float> *>(w->GetMutableSubfields()[0])->SetQuantized(10, {0.0f, 10.0f});
      model->AddField(std::move(w));
   }

   RNTupleWriteOptions options;
   options.SetCompression(compression);
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   auto &entry = writer->GetModel().GetDefaultEntry();
   for (int i = 0; i < 18; ++i) {
      *entry.GetPtr<float>("half") = Pick(kHalfValues, i);
      *entry.GetPtr<double>("double_half") = Pick(kHalfValues, i + 1);
      for (int bits : {10, 11, 16, 20, 31})
         *entry.GetPtr<float>("trunc" + std::to_string(bits)) = Pick(kTruncValues, i + bits);
      *entry.GetPtr<double>("double_trunc14") = Pick(kTruncValues, i);
      for (const auto &spec : kQuantSpecs)
         *entry.GetPtr<float>(spec.fName) = static_cast<float>(QuantValue(spec, i + spec.fBits));
      *entry.GetPtr<double>("double_quant16") = QuantValue({"", 16, -10, 10}, i);
      *entry.GetPtr<double>("double32") = Pick(kDoubleAsFloatValues, i);
      *entry.GetPtr<double>("double_as_real32") = Pick(kDoubleAsFloatValues, i + 3);
      *entry.GetPtr<double>("double_as_splitreal32") = Pick(kDoubleAsFloatValues, i + 7);
      auto &vh = *entry.GetPtr<std::vector<float>>("vec_half");
      vh.clear();
      for (int k = 0; k < i % 4; ++k)
         vh.push_back(Pick(kHalfValues, i + k));
      auto &vq = *entry.GetPtr<std::vector<float>>("vec_quant");
      vq.clear();
      for (int k = 0; k < i % 3; ++k)
         vq.push_back(static_cast<float>(QuantValue({"", 10, 0, 10}, i + k)));
      writer->Fill();
   }
}

void WriteReals(const std::string &path)
{
   auto file = Recreate(path);
   WriteRealsNTuple(*file, "Reals", 505);
   WriteRealsNTuple(*file, "RealsPlain", 0);
}

// ------------------------------------------------------------------------------------------------------------------
// containers
// ------------------------------------------------------------------------------------------------------------------

std::string LongString()
{
   std::string s;
   for (int i = 0; s.size() < 10000; ++i)
      s += "line " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog\n";
   return s;
}

void WriteContainers(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto str = model->MakeField<std::string>("string");
   auto vi = model->MakeField<std::vector<std::int32_t>>("vec_int");
   auto vvf = model->MakeField<std::vector<std::vector<float>>>("vec_vec_float");
   auto vs = model->MakeField<std::vector<std::string>>("vec_string");
   auto vb = model->MakeField<std::vector<bool>>("vec_bool");
   auto vbyte = model->MakeField<std::vector<std::byte>>("vec_byte");
   auto rv = model->MakeField<ROOT::RVec<double>>("rvec_double");
   auto rvv = model->MakeField<ROOT::RVec<ROOT::RVec<std::int16_t>>>("rvec_rvec_int16");
   auto arr = model->MakeField<std::array<float, 3>>("array_float");
   auto arr2 = model->MakeField<std::array<std::array<std::int16_t, 2>, 3>>("array_array_int16");
   auto arrs = model->MakeField<std::array<std::string, 2>>("array_string");
   auto varr = model->MakeField<std::vector<std::array<std::int32_t, 2>>>("vec_array_int");
   auto bs1 = model->MakeField<std::bitset<1>>("bitset1");
   auto bs8 = model->MakeField<std::bitset<8>>("bitset8");
   auto bs33 = model->MakeField<std::bitset<33>>("bitset33");
   auto bs100 = model->MakeField<std::bitset<100>>("bitset100");
   auto pr = model->MakeField<std::pair<std::int32_t, std::string>>("pair");
   auto tup = model->MakeField<std::tuple<std::int8_t, double, std::string>>("tuple");
   auto vpr = model->MakeField<std::vector<std::pair<float, std::uint16_t>>>("vec_pair");
   auto mp = model->MakeField<std::map<std::string, std::int32_t>>("map");
   auto ump = model->MakeField<std::unordered_map<std::int32_t, float>>("unordered_map");
   auto ummp = model->MakeField<std::unordered_multimap<std::string, std::int32_t>>("unordered_multimap");
   auto mmp = model->MakeField<std::multimap<std::int32_t, std::string>>("multimap");
   auto mvec = model->MakeField<std::map<std::int32_t, std::vector<std::int32_t>>>("map_vec");
   auto st = model->MakeField<std::set<std::int32_t>>("set");
   auto ust = model->MakeField<std::unordered_set<std::string>>("unordered_set");
   auto mst = model->MakeField<std::multiset<std::int32_t>>("multiset");
   auto umst = model->MakeField<std::unordered_multiset<std::int64_t>>("unordered_multiset");
   auto var = model->MakeField<std::variant<std::int32_t, float, std::string, std::vector<std::int32_t>>>("variant");
   auto vvar = model->MakeField<std::vector<std::variant<std::int64_t, std::string>>>("vec_variant");
   auto opt = model->MakeField<std::optional<std::int32_t>>("optional_int");
   auto opts = model->MakeField<std::optional<std::string>>("optional_string");
   auto vopt = model->MakeField<std::vector<std::optional<double>>>("vec_optional");
   auto up = model->MakeField<std::unique_ptr<std::int32_t>>("unique_ptr_int");
   auto upv = model->MakeField<std::unique_ptr<std::vector<float>>>("unique_ptr_vec");
   auto at = model->MakeField<std::atomic<std::int64_t>>("atomic_int64");
   auto atf = model->MakeField<std::atomic<float>>("atomic_float");
   auto atb = model->MakeField<std::atomic<bool>>("atomic_bool");
   auto ePlain = model->MakeField<EPlain>("enum_plain");
   auto eShade = model->MakeField<EShade>("enum_uint8");
   auto eSigned = model->MakeField<ESigned>("enum_int16");
   auto eWide = model->MakeField<EWide>("enum_uint64");
   auto eTiny = model->MakeField<ETiny>("enum_int8");
   auto vEnum = model->MakeField<std::vector<EShade>>("vec_enum");

   RNTupleWriteOptions options;
   // small pages, so that long strings and collections span several pages
   options.SetInitialUnzippedPageSize(64);
   options.SetMaxUnzippedPageSize(1024);
   auto writer = RNTupleWriter::Recreate(std::move(model), "Containers", path, options);

   const std::vector<std::string> strings = {"", "a", "hello, world", "h\u00e9llo w\u00f6rld \u2211 \U0001F600",
                                             LongString(), "tab\tnewline\nquote\"backslash\\", "\x01\x1f\x7f"};
   const int n = 8;
   for (int i = 0; i < n; ++i) {
      *str = Pick(strings, i);
      vi->clear();
      for (int k = 0; k < (i * 3) % 5; ++k)
         vi->push_back(i * 100 - k);
      vvf->clear();
      for (int k = 0; k < i % 4; ++k)
         vvf->emplace_back(std::vector<float>(k, 0.25f * (i + k)));
      vs->clear();
      for (int k = 0; k < i % 3; ++k)
         vs->push_back(Pick(strings, i + k));
      vb->clear();
      for (int k = 0; k < (i * 5) % 11; ++k)
         vb->push_back((i + k) % 3 == 0);
      vbyte->clear();
      for (int k = 0; k < i % 4; ++k)
         vbyte->push_back(static_cast<std::byte>(250 + k * i));
      rv->clear();
      for (int k = 0; k < i % 3; ++k)
         rv->push_back(F64(Pick(kF64Bits, i + k)));
      rvv->clear();
      for (int k = 0; k < i % 3; ++k)
         rvv->emplace_back(ROOT::RVec<std::int16_t>(k + 1, static_cast<std::int16_t>(-i * k)));
      *arr = {1.0f * i, -1.0f * i, F32(Pick(kF32Bits, i))};
      for (int r = 0; r < 3; ++r)
         for (int c = 0; c < 2; ++c)
            (*arr2)[r][c] = static_cast<std::int16_t>(i * 100 + r * 10 + c);
      *arrs = {Pick(strings, i), Pick(strings, i + 3)};
      varr->clear();
      for (int k = 0; k < i % 3; ++k)
         varr->push_back({i, -k});
      *bs1 = std::bitset<1>(i % 2);
      *bs8 = std::bitset<8>(0x5a ^ (i * 37));
      *bs33 = std::bitset<33>((1ull << 32) | (0x12345678ull * i));
      bs100->reset();
      for (int k = 0; k < 100; ++k)
         if ((k * k + i) % 7 == 0)
            bs100->set(k);
      *pr = {-i, Pick(strings, i + 1)};
      *tup = {static_cast<std::int8_t>(-i), 1.0 / (i + 1), std::to_string(i)};
      vpr->clear();
      for (int k = 0; k < i % 3; ++k)
         vpr->push_back({0.5f * k, static_cast<std::uint16_t>(65535 - k)});
      mp->clear();
      for (int k = 0; k < i % 4; ++k)
         (*mp)["key" + std::to_string((k * 7) % 5)] = i * k;
      ump->clear();
      for (int k = 0; k < i % 3; ++k)
         (*ump)[k * 1000 + i] = 0.5f * k;
      ummp->clear();
      for (int k = 0; k < i % 4; ++k)
         ummp->insert({"k" + std::to_string(k % 2), k});
      mmp->clear();
      for (int k = 0; k < i % 4; ++k)
         mmp->insert({k % 2, "v" + std::to_string(k)});
      mvec->clear();
      for (int k = 0; k < i % 3; ++k)
         (*mvec)[k] = std::vector<std::int32_t>(k, i);
      st->clear();
      for (int k = 0; k < i % 5; ++k)
         st->insert((k * 37 + i) % 11 - 5);
      ust->clear();
      for (int k = 0; k < i % 3; ++k)
         ust->insert("s" + std::to_string(k));
      mst->clear();
      for (int k = 0; k < i % 4; ++k)
         mst->insert(k % 2);
      umst->clear();
      for (int k = 0; k < i % 4; ++k)
         umst->insert(INT64_MIN + (k % 2));
      switch (i % 4) {
      case 0: *var = std::int32_t(-i); break;
      case 1: *var = 0.5f * i; break;
      case 2: *var = Pick(strings, i); break;
      case 3: *var = std::vector<std::int32_t>(i % 3, i); break;
      }
      vvar->clear();
      for (int k = 0; k < i % 3; ++k) {
         if ((i + k) % 2)
            vvar->emplace_back(std::int64_t(k) << 40);
         else
            vvar->emplace_back(std::string(k, 'x'));
      }
      *opt = (i % 3 == 0) ? std::optional<std::int32_t>() : std::optional<std::int32_t>(i - 4);
      *opts = (i % 2 == 0) ? std::optional<std::string>(Pick(strings, i)) : std::nullopt;
      vopt->clear();
      for (int k = 0; k < i % 4; ++k)
         vopt->push_back((k % 2) ? std::optional<double>() : std::optional<double>(k * 1.5));
      *up = (i % 2) ? std::make_unique<std::int32_t>(i * i) : nullptr;
      *upv = (i % 3 == 1) ? nullptr : std::make_unique<std::vector<float>>(i % 3, 2.0f);
      *at = (i % 2) ? INT64_MIN + i : INT64_MAX - i;
      *atf = F32(Pick(kF32Bits, i));
      *atb = i % 3 == 1;
      *ePlain = (i % 3 == 0) ? kPlainA : (i % 3 == 1) ? kPlainB : kPlainC;
      *eShade = (i % 3 == 0) ? EShade::kRed : (i % 3 == 1) ? EShade::kGreen : EShade::kBlue;
      *eSigned = (i % 3 == 0) ? ESigned::kLow : (i % 3 == 1) ? ESigned::kZero : ESigned::kHigh;
      *eWide = (i % 2) ? EWide::kHuge : EWide::kSmall;
      *eTiny = (i % 2) ? ETiny::kMin : ETiny::kMax;
      vEnum->clear();
      for (int k = 0; k < i % 3; ++k)
         vEnum->push_back(k % 2 ? EShade::kBlue : EShade::kGreen);
      writer->Fill();
      if (i == 4)
         writer->CommitCluster();
   }
}

// ------------------------------------------------------------------------------------------------------------------
// classes
// ------------------------------------------------------------------------------------------------------------------

Inner MakeInner(int i)
{
   Inner in;
   in.fShort = static_cast<std::int16_t>(-i * 3);
   for (int k = 0; k < i % 3; ++k)
      in.fTags.push_back("tag" + std::to_string(i) + "_" + std::to_string(k));
   return in;
}

Derived MakeDerived(int i)
{
   Derived d;
   d.fBaseInt = i - 2;
   d.fBaseFloat = 0.25f * i;
   d.fLabel = "derived " + std::to_string(i);
   d.fDouble = 1.0 / (i + 3);
   d.fInner = MakeInner(i);
   for (int k = 0; k < i % 4; ++k)
      d.fVec.push_back(i * 10 + k);
   d.fArr = {1.0f * i, 2.0f * i, 3.0f * i};
   return d;
}

void WriteClasses(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto derived = model->MakeField<Derived>("derived");
   auto grand = model->MakeField<GrandChild>("grandchild");
   auto arrays = model->MakeField<WithArrays>("with_arrays");
   auto outer = model->MakeField<fixture::Outer>("outer");
   auto templ = model->MakeField<Templ<std::int16_t, 3>>("templ");
   auto vecDerived = model->MakeField<std::vector<Derived>>("vec_derived");
   auto misc = model->MakeField<WithMisc>("misc");
   auto empty = model->MakeField<Empty>("empty");
   auto transient = model->MakeField<Transient>("transient");
   auto points = model->MakeField<std::vector<Point>>("points");
   auto mapInner = model->MakeField<std::map<std::string, Inner>>("map_inner");
   auto optPoint = model->MakeField<std::optional<Point>>("optional_point");
   InstallIntBagProxy();
   model->AddField(RFieldBase::Create("bag", "IntBag").Unwrap());
   model->AddField(RFieldBase::Create("vec_bag", "std::vector<IntBag>").Unwrap());
   model->AddField(RFieldBase::Create("streamed", "StreamedThing").Unwrap());
   model->AddField(std::make_unique<ROOT::Experimental::RSoAField>("soa", "PointSoA"));
   auto tobject = model->MakeField<TObject>("tobject");
   auto vecTObject = model->MakeField<std::vector<TObject>>("vec_tobject");
   auto tracked = model->MakeField<Tracked>("tracked");
   // A TObject-derived class with a hand-written streamer, which RNTuple
   // stores only through its streamer.
   model->AddField(std::make_unique<ROOT::RStreamerField>("lorentz", "TLorentzVector"));

   auto writer = RNTupleWriter::Recreate(std::move(model), "Classes", path);
   auto lorentz = Ptr<TLorentzVector>(*writer, "lorentz");
   auto streamed = Ptr<StreamedThing>(*writer, "streamed");
   auto bag = Ptr<IntBag>(*writer, "bag");
   auto vecBag = Ptr<std::vector<IntBag>>(*writer, "vec_bag");
   auto soa = Ptr<PointSoA>(*writer, "soa");
   for (int i = 0; i < 6; ++i) {
      *derived = MakeDerived(i);
      static_cast<Derived &>(*grand) = MakeDerived(i + 10);
      grand->fByte = static_cast<std::uint8_t>(250 + i);
      arrays->fVec.assign(i % 3, -0.5f * i);
      arrays->fArr = {i, -i, i * i, INT32_MIN + i};
      for (int r = 0; r < 2; ++r)
         for (int c = 0; c < 3; ++c)
            arrays->fCArr[r][c] = r * 10 + c + 0.5f * i;
      arrays->fVecOfArr.clear();
      for (int k = 0; k < i % 3; ++k)
         arrays->fVecOfArr.push_back({static_cast<std::uint16_t>(k), static_cast<std::uint16_t>(i)});
      outer->fNested.fX = -(std::int64_t(1) << (i * 7));
      outer->fNested.fName = "nested" + std::to_string(i);
      outer->fNestedVec.clear();
      for (int k = 0; k < i % 3; ++k)
         outer->fNestedVec.push_back({k, std::string(k, 'n')});
      templ->fData = {static_cast<std::int16_t>(i), static_cast<std::int16_t>(-i), 32767};
      vecDerived->clear();
      for (int k = 0; k < i % 3; ++k)
         vecDerived->push_back(MakeDerived(i + k));
      misc->fShade = (i % 2) ? EShade::kBlue : EShade::kGreen;
      misc->fPtr = (i % 3) ? std::make_unique<Inner>(MakeInner(i)) : nullptr;
      misc->fD32 = 1.0 / 3 + i;
      misc->fMap.clear();
      for (int k = 0; k < i % 3; ++k)
         misc->fMap["m" + std::to_string(k)] = k - i;
      misc->fFlag = i % 2 == 0;
      transient->fKept = i;
      transient->fDropped = 1000 + i;
      points->clear();
      for (int k = 0; k < i % 4; ++k)
         points->push_back({0.5f * k, -0.5f * i, k * 100 + i});
      mapInner->clear();
      for (int k = 0; k < i % 3; ++k)
         (*mapInner)["inner" + std::to_string(k)] = MakeInner(i + k);
      *optPoint = (i % 2) ? std::optional<Point>(Point{1.0f * i, 2.0f * i, i}) : std::nullopt;
      bag->fItems.clear();
      for (int k = 0; k < (i * 3) % 5; ++k)
         bag->fItems.push_back(i * 1000 + k);
      vecBag->clear();
      for (int k = 0; k < i % 3; ++k)
         vecBag->push_back(IntBag{std::vector<std::int32_t>(k + 1, -i)});
      streamed->fA = i;
      streamed->fB.assign(i % 3, 0.5 * i);
      // User bits (14 to 23) and unique IDs; ROOT refuses kIsReferenced.
      tobject->SetUniqueID(7u * i);
      tobject->SetBit(1u << (14 + i), true);
      vecTObject->resize(i % 3);
      for (std::size_t k = 0; k < vecTObject->size(); ++k) {
         (*vecTObject)[k].SetUniqueID(100 + i + k);
         (*vecTObject)[k].ResetBit(1u << 23);
         (*vecTObject)[k].SetBit(1u << 23, k % 2 == 1);
      }
      tracked->SetUniqueID(0xffffffffu - i);
      tracked->SetBit(1u << (23 - i), true);
      tracked->fCount = -i;
      lorentz->SetPxPyPzE(0.5 * i, -1.5 * i, 2.0 + i, 10.0 + 3 * i);
      lorentz->SetUniqueID(11u * i);
      soa->x.clear();
      soa->y.clear();
      soa->id.clear();
      for (int k = 0; k < i % 4; ++k) {
         soa->x.push_back(1.0f * k);
         soa->y.push_back(-1.0f * i);
         soa->id.push_back(i * 10 + k);
      }
      writer->Fill();
   }
}

// ------------------------------------------------------------------------------------------------------------------
// extension
// ------------------------------------------------------------------------------------------------------------------

/// Late members of an untyped record from the header; ROOT allows this only for bare models
void WriteExtensionBare(TFile &file)
{
   auto model = RNTupleModel::CreateBare();
   model->MakeField<std::int32_t>("x");
   {
      std::vector<std::unique_ptr<RFieldBase>> items;
      items.emplace_back(std::make_unique<ROOT::RField<float>>("a"));
      model->AddField(std::make_unique<ROOT::RRecordField>("rec", std::move(items)));
   }
   auto writer = RNTupleWriter::Append(std::move(model), "ExtensionBare", file);
   int i = 0;
   for (; i < 4; ++i) {
      auto entry = writer->CreateEntry();
      *entry->GetPtr<std::int32_t>("x") = i;
      *static_cast<float *>(RecordItems(*entry, "rec")[0]) = 0.5f * i;
      writer->Fill(*entry);
   }
   writer->CommitCluster();
   auto updater = writer->CreateModelUpdater();
   updater->BeginUpdate();
   updater->AddField(std::make_unique<ROOT::RField<std::uint16_t>>("b"), "rec");
   updater->AddField(std::make_unique<ROOT::RField<std::string>>("c"), "rec");
   updater->AddField(std::make_unique<ROOT::RField<double>>("late"));
   updater->CommitUpdate();
   for (; i < 8; ++i) {
      auto entry = writer->CreateEntry();
      *entry->GetPtr<std::int32_t>("x") = i;
      auto items = RecordItems(*entry, "rec");
      *static_cast<float *>(items.at(0)) = 0.5f * i;
      *static_cast<std::uint16_t *>(items.at(1)) = static_cast<std::uint16_t>(60000 + i);
      *static_cast<std::string *>(items.at(2)) = "c" + std::to_string(i);
      *entry->GetPtr<double>("late") = -1.0 * i;
      writer->Fill(*entry);
   }
}

void WriteExtension(const std::string &path)
{
   auto file = Recreate(path);
   WriteExtensionBare(*file);
   auto model = RNTupleModel::Create();
   auto x = model->MakeField<std::int32_t>("x");
   auto s = model->MakeField<std::string>("s");
   {
      std::vector<std::unique_ptr<RFieldBase>> items;
      items.emplace_back(std::make_unique<ROOT::RField<float>>("a"));
      model->AddField(std::make_unique<ROOT::RRecordField>("rec", std::move(items)));
   }
   auto writer = RNTupleWriter::Append(std::move(model), "Extension", *file);
   auto fill = [&](int i) {
      *x = i;
      *s = "s" + std::to_string(i);
      *static_cast<float *>(RecordItems(*writer, "rec")[0]) = 0.5f * i;
   };
   int i = 0;
   for (; i < 5; ++i) {
      fill(i);
      writer->Fill();
      if (i == 2)
         writer->CommitCluster();
   }
   writer->CommitCluster();

   // First schema extension: scalars, a class, collections, a variant that stays valueless before, a projection
   auto updater = writer->CreateModelUpdater();
   updater->BeginUpdate();
   auto lateF = updater->MakeField<float>("late_float");
   auto lateStruct = updater->MakeField<Inner>("late_struct");
   auto lateVec = updater->MakeField<std::vector<std::int32_t>>("late_vec");
   auto lateStr = updater->MakeField<std::string>("late_string");
   auto lateVar = updater->MakeField<std::variant<std::int32_t, std::string>>("late_variant");
   // Valueless before, and its first alternative can be empty: the two read apart.
   auto lateOptVar =
      updater->MakeField<std::variant<std::optional<std::int32_t>, std::string>>("late_optional_variant");
   auto lateOpt = updater->MakeField<std::optional<double>>("late_optional");
   auto lateArr = updater->MakeField<std::array<std::int16_t, 2>>("late_array");
   auto lateBits = updater->MakeField<std::bitset<5>>("late_bitset");
   auto lateEnum = updater->MakeField<EShade>("late_enum");
   {
      std::vector<std::unique_ptr<RFieldBase>> items;
      items.emplace_back(std::make_unique<ROOT::RField<std::int64_t>>("i"));
      items.emplace_back(std::make_unique<ROOT::RField<std::string>>("t"));
      updater->AddField(std::make_unique<ROOT::RRecordField>("late_record", std::move(items)));
   }
   updater->AddProjectedField(RFieldBase::Create("late_vec_size", "ROOT::RNTupleCardinality<std::uint64_t>").Unwrap(),
                              PrefixMapping{"late_vec_size", "late_vec"})
      .ThrowOnError();
   updater->AddProjectedField(RFieldBase::Create("x_alias", "std::int32_t").Unwrap(), PrefixMapping{"x_alias", "x"})
      .ThrowOnError();
   updater->CommitUpdate();

   for (; i < 12; ++i) {
      fill(i);
      *lateF = -0.25f * i;
      *lateStruct = MakeInner(i);
      lateVec->assign(i % 3, i);
      *lateStr = std::string(i % 4, 'L');
      if (i % 2)
         *lateVar = std::int32_t(i);
      else
         *lateVar = "v" + std::to_string(i);
      *lateOpt = (i % 3) ? std::optional<double>(i * 0.125) : std::nullopt;
      if (i % 3 == 0)
         *lateOptVar = std::optional<std::int32_t>();
      else if (i % 3 == 1)
         *lateOptVar = std::optional<std::int32_t>(i);
      else
         *lateOptVar = "w" + std::to_string(i);
      *lateArr = {static_cast<std::int16_t>(i), static_cast<std::int16_t>(-i)};
      *lateBits = std::bitset<5>(i);
      *lateEnum = EShade::kBlue;
      auto items = RecordItems(*writer, "late_record");
      *static_cast<std::int64_t *>(items[0]) = -i;
      *static_cast<std::string *>(items[1]) = "r" + std::to_string(i);
      writer->Fill();
      if (i == 8)
         writer->CommitCluster(true /* commit cluster group */);
   }
   writer->CommitCluster(true);

   // Second schema extension in a later cluster group
   updater->BeginUpdate();
   auto late2 = updater->MakeField<std::int64_t>("late2_int64");
   auto late2vv = updater->MakeField<std::vector<std::vector<float>>>("late2_vec_vec");
   updater->CommitUpdate();
   for (; i < 16; ++i) {
      fill(i);
      *lateF = 100.0f + i;
      *late2 = INT64_MIN + i;
      late2vv->assign(i % 3, std::vector<float>(i % 2 + 1, 0.5f * i));
      writer->Fill();
   }
}

// ------------------------------------------------------------------------------------------------------------------
// clusters
// ------------------------------------------------------------------------------------------------------------------

void WriteClusters(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto idx = model->MakeField<std::uint64_t>("index");
   auto f = model->MakeField<float>("float");
   auto s = model->MakeField<std::string>("string");
   auto v = model->MakeField<std::vector<std::int16_t>>("vec");
   auto vv = model->MakeField<std::vector<std::vector<std::uint8_t>>>("vec_vec");
   auto b = model->MakeField<bool>("bool");
   RNTupleWriteOptions options;
   options.SetInitialUnzippedPageSize(64);
   options.SetMaxUnzippedPageSize(256);
   auto writer = RNTupleWriter::Recreate(std::move(model), "Clusters", path, options);
   // cluster sizes; a cluster group is committed after every third cluster
   const int sizes[] = {1, 7, 13, 2, 40, 1, 1, 30, 5, 3, 60, 9, 1, 17};
   int i = 0, nCluster = 0;
   for (int size : sizes) {
      for (int k = 0; k < size; ++k, ++i) {
         *idx = i;
         *f = 0.125f * i;
         *s = std::string(i % 13, static_cast<char>('a' + i % 26)) + std::to_string(i);
         v->clear();
         for (int m = 0; m < (i * 7) % 9; ++m)
            v->push_back(static_cast<std::int16_t>(i * 10 - m));
         vv->clear();
         for (int m = 0; m < i % 4; ++m)
            vv->emplace_back(m, static_cast<std::uint8_t>(i + m));
         *b = (i % 3) == 0;
         writer->Fill();
      }
      ++nCluster;
      writer->CommitCluster(nCluster % 3 == 0);
   }
}

// ------------------------------------------------------------------------------------------------------------------
// empty
// ------------------------------------------------------------------------------------------------------------------

/// Pages of up to 256 Ki values, ROOT's largest by default: split 32-bit
/// reals and integers and a collection's floats. Batches of the whole file
/// hold more than 4 MiB of arrays, which the reader writes with streaming
/// stores. The values come in runs (floor(sqrt(i))), so the golden stays
/// small.
void WriteBigPages(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto f = model->MakeField<float>("f");
   auto u = model->MakeField<std::uint32_t>("u");
   auto s = model->MakeField<std::int32_t>("s");
   auto v = model->MakeField<ROOT::RVec<float>>("v");
   auto writer = RNTupleWriter::Recreate(std::move(model), "BigPages", path);
   for (std::uint32_t i = 0; i < 160000; ++i) {
      auto r = static_cast<std::uint32_t>(std::sqrt(static_cast<double>(i)));
      *f = 0.5f * r + 0.25f;
      *u = r * 7919u;
      *s = (r % 2 ? -1 : 1) * static_cast<std::int32_t>(r) * 1000;
      *v = {1.5f * r, -1.0f * r};
      writer->Fill();
   }
}

void WriteEmpty(const std::string &path)
{
   auto file = Recreate(path);
   {
      auto model = RNTupleModel::Create();
      model->MakeField<std::int32_t>("int");
      model->MakeField<std::string>("string");
      model->MakeField<std::vector<float>>("vec");
      model->MakeField<Point>("point");
      model->MakeField<std::variant<std::int32_t, std::string>>("variant");
      auto writer = RNTupleWriter::Append(std::move(model), "Empty", *file);
   }
   {
      // entries but no fields
      auto model = RNTupleModel::Create();
      auto writer = RNTupleWriter::Append(std::move(model), "NoFields", *file);
      for (int i = 0; i < 3; ++i)
         writer->Fill();
   }
   {
      // neither entries nor fields
      auto writer = RNTupleWriter::Append(RNTupleModel::Create(), "Nothing", *file);
   }
}

// ------------------------------------------------------------------------------------------------------------------
// multi
// ------------------------------------------------------------------------------------------------------------------

void WriteMulti(const std::string &path)
{
   auto file = Recreate(path);
   {
      auto model = RNTupleModel::Create();
      auto a = model->MakeField<std::int32_t>("a");
      auto writer = RNTupleWriter::Append(std::move(model), "A", *file);
      for (int i = 0; i < 5; ++i) {
         *a = i;
         writer->Fill();
      }
   }
   TNamed named("not_an_ntuple", "a TNamed next to the RNTuples");
   file->WriteTObject(&named);
   {
      auto model = RNTupleModel::Create();
      auto b = model->MakeField<std::string>("b");
      auto c = model->MakeField<std::vector<double>>("c");
      auto writer = RNTupleWriter::Append(std::move(model), "B", *file);
      for (int i = 0; i < 3; ++i) {
         *b = "B" + std::to_string(i);
         c->assign(i, -1.0 * i);
         writer->Fill();
      }
   }
   auto sub = file->mkdir("sub");
   {
      auto model = RNTupleModel::Create();
      auto x = model->MakeField<float>("x");
      auto writer = RNTupleWriter::Append(std::move(model), "C", *sub);
      for (int i = 0; i < 4; ++i) {
         *x = 2.0f * i;
         writer->Fill();
      }
   }
   auto deeper = sub->mkdir("deeper");
   {
      auto model = RNTupleModel::Create();
      auto y = model->MakeField<std::uint8_t>("y");
      auto writer = RNTupleWriter::Append(std::move(model), "A", *deeper);
      for (int i = 0; i < 2; ++i) {
         *y = 200 + i;
         writer->Fill();
      }
   }
}

// ------------------------------------------------------------------------------------------------------------------
// projections
// ------------------------------------------------------------------------------------------------------------------

void WriteProjections(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto v = model->MakeField<std::vector<float>>("v");
   auto pts = model->MakeField<std::vector<Point>>("points");
   auto met = model->MakeField<float>("met");
   auto pt = model->MakeField<Point>("point");
   auto vv = model->MakeField<std::vector<std::vector<std::int32_t>>>("vv");
   auto add = [&](const std::string &name, const std::string &type, const std::string &source) {
      model->AddProjectedField(RFieldBase::Create(name, type).Unwrap(), PrefixMapping{name, source}).ThrowOnError();
   };
   add("v_size32", "ROOT::RNTupleCardinality<std::uint32_t>", "v");
   add("v_size64", "ROOT::RNTupleCardinality<std::uint64_t>", "v");
   add("v_rvec", "ROOT::VecOps::RVec<float>", "v");
   add("met_alias", "float", "met");
   add("point_alias", "Point", "point");
   add("points_size", "ROOT::RNTupleCardinality<std::uint32_t>", "points");
   add("vv_size", "ROOT::RNTupleCardinality<std::uint64_t>", "vv");
   add("vv_inner", "std::vector<std::vector<std::int32_t>>", "vv");
   model->AddProjectedField(RFieldBase::Create("points_x", "std::vector<float>").Unwrap(),
                            MemberMapping{"points_x", "points", "x"})
      .ThrowOnError();
   model->AddProjectedField(RFieldBase::Create("points_id", "ROOT::VecOps::RVec<std::int32_t>").Unwrap(),
                            MemberMapping{"points_id", "points", "id"})
      .ThrowOnError();

   auto writer = RNTupleWriter::Recreate(std::move(model), "Projections", path);
   for (int i = 0; i < 7; ++i) {
      v->assign(i % 4, 1.5f * i);
      pts->clear();
      for (int k = 0; k < (i * 5) % 4; ++k)
         pts->push_back({1.0f * k, -1.0f * k, i * 10 + k});
      *met = 10.0f + i;
      *pt = {0.5f * i, -0.5f * i, -i};
      vv->clear();
      for (int k = 0; k < i % 3; ++k)
         vv->emplace_back(k + 1, i);
      writer->Fill();
      if (i == 3)
         writer->CommitCluster();
   }
}

// ------------------------------------------------------------------------------------------------------------------
// importer
// ------------------------------------------------------------------------------------------------------------------

/// A NanoAOD-like TTree: scalars, fixed-size arrays and variable-size arrays with counter branches
void WriteNanoTree(const std::string &path)
{
   auto file = Recreate(path);
   auto tree = new TTree("Events", "NanoAOD-like events");
   UInt_t run = 0, nMuon = 0;
   ULong64_t event = 0;
   Float_t metPt = 0;
   Bool_t flag = false;
   Int_t nJet = 0;
   Float_t muonPt[8], muonEta[8];
   Int_t muonCharge[8];
   Float_t jetPt[8];
   UChar_t jetId[8];
   Bool_t trig[4];
   Double_t vals[3];
   Short_t small = 0;
   Char_t chr = 0;
   Long64_t big = 0;
   tree->Branch("run", &run, "run/i");
   tree->Branch("event", &event, "event/l");
   tree->Branch("MET_pt", &metPt, "MET_pt/F");
   tree->Branch("flag", &flag, "flag/O");
   tree->Branch("small", &small, "small/S");
   tree->Branch("chr", &chr, "chr/B");
   tree->Branch("big", &big, "big/L");
   tree->Branch("trig", trig, "trig[4]/O");
   tree->Branch("vals", vals, "vals[3]/D");
   tree->Branch("nMuon", &nMuon, "nMuon/i");
   tree->Branch("Muon_pt", muonPt, "Muon_pt[nMuon]/F");
   tree->Branch("Muon_eta", muonEta, "Muon_eta[nMuon]/F");
   tree->Branch("Muon_charge", muonCharge, "Muon_charge[nMuon]/I");
   tree->Branch("nJet", &nJet, "nJet/I");
   tree->Branch("Jet_pt", jetPt, "Jet_pt[nJet]/F");
   tree->Branch("Jet_id", jetId, "Jet_id[nJet]/b");
   Rng rng(7);
   for (int i = 0; i < 12; ++i) {
      run = 1;
      event = 1000000000000ull + i;
      metPt = 0.5f * static_cast<float>(rng.Next() % 1000);
      flag = i % 2;
      small = static_cast<Short_t>(-i * 1000);
      chr = static_cast<Char_t>(i * 20 - 100);
      big = -(Long64_t(1) << 40) * i;
      for (int k = 0; k < 4; ++k)
         trig[k] = (i >> k) & 1;
      for (int k = 0; k < 3; ++k)
         vals[k] = i + 0.1 * k;
      nMuon = (i * 5) % 4;
      for (UInt_t k = 0; k < nMuon; ++k) {
         muonPt[k] = 10.0f + static_cast<float>(rng.Next() % 10000) / 100;
         muonEta[k] = -2.4f + static_cast<float>(rng.Next() % 480) / 100;
         muonCharge[k] = (rng.Next() % 2) ? 1 : -1;
      }
      nJet = i % 3;
      for (Int_t k = 0; k < nJet; ++k) {
         jetPt[k] = 20.0f + k + i;
         jetId[k] = static_cast<UChar_t>(k * 3 + i);
      }
      tree->Fill();
   }
   tree->Write();
}

void ImportNanoTree(const std::string &treePath, const std::string &path)
{
   std::unique_ptr<TFile> file(TFile::Open(treePath.c_str()));
   auto tree = file->Get<TTree>("Events");
   auto importer = ROOT::Experimental::RNTupleImporter::Create(tree, path);
   importer->SetIsQuiet(true);
   importer->Import();
}

// ------------------------------------------------------------------------------------------------------------------
// attributes
// ------------------------------------------------------------------------------------------------------------------

/// One source of the `merged` fixture (`part` 0 or 1), with two RNTuples:
/// `Late`, whose part 0 gains its fields but `x` by late model extensions
/// (after a cluster, and `g` within one) while part 1 has them from the
/// start; and `Union`, whose parts hold different fields besides `x`.
void WriteMergeSource(const std::string &path, int part, int compression)
{
   auto file = Recreate(path);
   RNTupleWriteOptions options;
   options.SetCompression(compression);
   {
      auto model = RNTupleModel::Create();
      auto x = model->MakeField<std::int32_t>("x");
      std::shared_ptr<std::variant<double, std::int64_t>> v;
      std::shared_ptr<float> f;
      std::shared_ptr<std::string> s;
      std::shared_ptr<std::vector<std::int32_t>> vec;
      std::shared_ptr<std::uint8_t> g;
      auto addLate = [&](auto &m) {
         v = m.template MakeField<std::variant<double, std::int64_t>>("v");
         f = m.template MakeField<float>("f");
         s = m.template MakeField<std::string>("s");
         vec = m.template MakeField<std::vector<std::int32_t>>("vec");
      };
      if (part == 1) {
         addLate(*model);
         g = model->MakeField<std::uint8_t>("g");
      }
      auto writer = RNTupleWriter::Append(std::move(model), "Late", *file, options);
      const int n = part == 0 ? 7 : 4;
      for (int i = 0; i < n; ++i) {
         const int k = 100 * part + i;
         if (part == 0 && i == 3) {
            writer->CommitCluster();
            auto updater = writer->CreateModelUpdater();
            updater->BeginUpdate();
            addLate(*updater);
            updater->CommitUpdate();
         }
         if (part == 0 && i == 5) {
            auto updater = writer->CreateModelUpdater();
            updater->BeginUpdate();
            g = updater->MakeField<std::uint8_t>("g");
            updater->CommitUpdate();
         }
         *x = k;
         if (v) {
            if (k % 2)
               *v = std::int64_t(-k) << 40;
            else
               *v = -0.25 * k;
            *f = 1.5f * k;
            *s = std::string(k % 4, 'a' + k % 26);
            vec->assign(k % 3, k);
         }
         if (g)
            *g = std::uint8_t(200 + k % 50);
         writer->Fill();
      }
   }
   {
      auto model = RNTupleModel::Create();
      auto x = model->MakeField<std::int32_t>("x");
      std::shared_ptr<std::vector<float>> y;
      std::shared_ptr<std::string> z;
      std::shared_ptr<std::optional<std::int16_t>> w;
      if (part == 0) {
         y = model->MakeField<std::vector<float>>("y");
      } else {
         z = model->MakeField<std::string>("z");
         w = model->MakeField<std::optional<std::int16_t>>("w");
      }
      auto writer = RNTupleWriter::Append(std::move(model), "Union", *file, options);
      const int n = part == 0 ? 5 : 6;
      for (int i = 0; i < n; ++i) {
         const int k = 100 * part + i;
         *x = k;
         if (y)
            y->assign(k % 3 + 1, 0.5f * k);
         if (z) {
            *z = "z" + std::to_string(k);
            *w = k % 2 ? std::optional<std::int16_t>(std::int16_t(-k)) : std::nullopt;
         }
         writer->Fill();
         if (i == 2)
            writer->CommitCluster();
      }
   }
}

void WriteAttributes(const std::string &path)
{
   auto model = RNTupleModel::Create();
   auto x = model->MakeField<std::int32_t>("x");
   // attribute sets need a TFile-backed writer
   auto file = Recreate(path);
   auto writer = RNTupleWriter::Append(std::move(model), "Events", *file);

   auto runModel = RNTupleModel::Create();
   auto runNumber = runModel->MakeField<std::uint32_t>("run");
   auto label = runModel->MakeField<std::string>("label");
   auto runs = writer->CreateAttributeSet(std::move(runModel), "Runs");

   auto weightModel = RNTupleModel::Create();
   auto weights = weightModel->MakeField<std::vector<float>>("weights");
   auto weightSet = writer->CreateAttributeSet(std::move(weightModel), "Weights");

   int i = 0;
   for (int r = 0; r < 3; ++r) {
      auto range = runs->BeginRange();
      for (int k = 0; k < 2 + r; ++k, ++i) {
         auto wrange = weightSet->BeginRange();
         *x = i;
         writer->Fill();
         weights->assign(k + 1, 0.5f * i);
         weightSet->CommitRange(std::move(wrange));
      }
      *runNumber = 100 + r;
      *label = "run " + std::to_string(100 + r);
      runs->CommitRange(std::move(range));
   }
   // an empty range after the last entry
   auto range = runs->BeginRange();
   *runNumber = 999;
   *label = "empty range";
   runs->CommitRange(std::move(range));
}


/// Random values of any composition of standard types, for the `nested`
/// fixture: every nesting of collections, optionals and variants reads as
/// ROOT reads it, across page and cluster boundaries.
namespace nested {

/// A collection length: often empty or short, sometimes long.
inline std::size_t Len(Rng &r)
{
   auto k = r.Next() % 16;
   return k < 4 ? 0 : (k < 12 ? r.Next() % 4 : r.Next() % 12);
}

/// The range of the quantised reals of the field being filled: while set,
/// every real value falls in it (a quantised column holds no other).
struct QuantRange {
   bool fOn = false;
   double fMin = 0;
   double fMax = 0;
};
inline QuantRange gQuant;

template <typename T>
struct Fill {
   static void Do(T &x, Rng &r)
   {
      if constexpr (std::is_same_v<T, bool>) {
         x = r.Next() & 1;
      } else if constexpr (std::is_enum_v<T>) {
         // Any value of the underlying type, named by an enumerator or not.
         x = static_cast<T>(r.Next());
      } else if constexpr (std::is_floating_point_v<T>) {
         if (gQuant.fOn) {
            // The range's ends, or a point between them (min and max are
            // floats, so a float rounded from the double stays inside).
            auto k = r.Next() % 4;
            double u = double(r.Next() >> 11) * 0x1p-53;
            x = T(k == 0 ? gQuant.fMin : (k == 1 ? gQuant.fMax : gQuant.fMin + u * (gQuant.fMax - gQuant.fMin)));
            return;
         }
         switch (r.Next() % 8) {
         case 0: x = std::numeric_limits<T>::max(); break;
         case 1: x = -std::numeric_limits<T>::denorm_min(); break;
         case 2: x = std::numeric_limits<T>::quiet_NaN(); break;
         case 3: x = -0.0; break;
         default: x = T(double(std::int64_t(r.Next())) / 1e12);
         }
      } else {
         switch (r.Next() % 6) {
         case 0: x = std::numeric_limits<T>::max(); break;
         case 1: x = std::numeric_limits<T>::min(); break;
         case 2: x = 0; break;
         default: x = T(r.Next());
         }
      }
   }
};
template <>
struct Fill<TObject> {
   static void Do(TObject &x, Rng &r)
   {
      x.SetUniqueID(static_cast<UInt_t>(r.Next()));
      // The user bits, 14 to 23 (ROOT refuses kIsReferenced).
      for (unsigned bit = 14; bit < 24; ++bit)
         x.SetBit(1u << bit, r.Next() % 2);
   }
};
template <>
struct Fill<std::string> {
   static void Do(std::string &x, Rng &r)
   {
      x.assign(Len(r), ' ');
      for (auto &c : x)
         c = char(32 + r.Next() % 95);
   }
};
template <typename T>
struct Fill<std::vector<T>> {
   static void Do(std::vector<T> &x, Rng &r)
   {
      x.resize(Len(r));
      for (auto &e : x)
         Fill<T>::Do(e, r);
   }
};
template <>
struct Fill<std::vector<bool>> {
   static void Do(std::vector<bool> &x, Rng &r)
   {
      x.resize(Len(r));
      for (std::size_t i = 0; i < x.size(); ++i)
         x[i] = r.Next() & 1;
   }
};
template <typename T>
struct Fill<ROOT::RVec<T>> {
   static void Do(ROOT::RVec<T> &x, Rng &r)
   {
      x.resize(Len(r));
      for (auto &e : x)
         Fill<T>::Do(e, r);
   }
};
template <typename T, std::size_t N>
struct Fill<std::array<T, N>> {
   static void Do(std::array<T, N> &x, Rng &r)
   {
      for (auto &e : x)
         Fill<T>::Do(e, r);
   }
};
/// Sets and maps: up to Len(r) random elements (keys may repeat, so sets
/// and maps can hold fewer).
template <typename C>
struct FillAssociative {
   static void Do(C &x, Rng &r)
   {
      x.clear();
      for (std::size_t i = 0, n = Len(r); i < n; ++i) {
         typename C::value_type v{};
         if constexpr (std::is_same_v<typename C::key_type, typename C::value_type>) {
            Fill<typename C::value_type>::Do(v, r);
            x.insert(std::move(v));
         } else {
            typename C::key_type k{};
            typename C::mapped_type m{};
            Fill<typename C::key_type>::Do(k, r);
            Fill<typename C::mapped_type>::Do(m, r);
            x.emplace(std::move(k), std::move(m));
         }
      }
   }
};
template <typename... T>
struct Fill<std::set<T...>> : FillAssociative<std::set<T...>> {};
template <typename... T>
struct Fill<std::multiset<T...>> : FillAssociative<std::multiset<T...>> {};
template <typename... T>
struct Fill<std::unordered_set<T...>> : FillAssociative<std::unordered_set<T...>> {};
template <typename... T>
struct Fill<std::map<T...>> : FillAssociative<std::map<T...>> {};
template <typename... T>
struct Fill<std::multimap<T...>> : FillAssociative<std::multimap<T...>> {};
template <typename... T>
struct Fill<std::unordered_map<T...>> : FillAssociative<std::unordered_map<T...>> {};
template <typename... T>
struct Fill<std::unordered_multimap<T...>> : FillAssociative<std::unordered_multimap<T...>> {};
template <typename T>
struct Fill<std::atomic<T>> {
   static void Do(std::atomic<T> &x, Rng &r)
   {
      T v{};
      Fill<T>::Do(v, r);
      x.store(v);
   }
};
template <typename T, std::size_t N>
struct Fill<T[N]> {
   static void Do(T (&x)[N], Rng &r)
   {
      for (auto &e : x)
         Fill<T>::Do(e, r);
   }
};
template <typename T>
struct Fill<std::optional<T>> {
   static void Do(std::optional<T> &x, Rng &r)
   {
      if (r.Next() % 3 == 0) {
         x.reset();
      } else {
         T v{};
         Fill<T>::Do(v, r);
         x = std::move(v);
      }
   }
};
template <typename T>
struct Fill<std::unique_ptr<T>> {
   static void Do(std::unique_ptr<T> &x, Rng &r)
   {
      if (r.Next() % 3 == 0) {
         x.reset();
      } else {
         x = std::make_unique<T>();
         Fill<T>::Do(*x, r);
      }
   }
};
template <typename A, typename B>
struct Fill<std::pair<A, B>> {
   static void Do(std::pair<A, B> &x, Rng &r)
   {
      Fill<A>::Do(x.first, r);
      Fill<B>::Do(x.second, r);
   }
};
template <typename... T>
struct Fill<std::tuple<T...>> {
   static void Do(std::tuple<T...> &x, Rng &r)
   {
      std::apply([&](auto &...e) { (Fill<std::decay_t<decltype(e)>>::Do(e, r), ...); }, x);
   }
};
template <std::size_t N>
struct Fill<std::bitset<N>> {
   static void Do(std::bitset<N> &x, Rng &r)
   {
      for (std::size_t i = 0; i < N; ++i)
         x[i] = r.Next() & 1;
   }
};
template <typename... T>
struct Fill<std::variant<T...>> {
   template <std::size_t I>
   static void Pick(std::variant<T...> &x, Rng &r, std::size_t k)
   {
      if constexpr (I < sizeof...(T)) {
         if (k == I) {
            std::variant_alternative_t<I, std::variant<T...>> v{};
            Fill<decltype(v)>::Do(v, r);
            x = std::move(v);
         } else {
            Pick<I + 1>(x, r, k);
         }
      }
   }
   static void Do(std::variant<T...> &x, Rng &r) { Pick<0>(x, r, r.Next() % sizeof...(T)); }
};

/// Reduced precision for the real field `f`, now and then: half precision,
/// truncation or quantisation (into the range of `quant`, chosen here for
/// the first quantised field under a top-level field).
template <typename T>
void ReducePrecision(ROOT::RRealField<T> &f, Rng &r, QuantRange &quant)
{
   switch (r.Next() % 6) {
   case 0: f.SetHalfPrecision(); break;
   case 1: f.SetTruncated(10 + r.Next() % 22); break;
   case 2: {
      if (!quant.fOn) {
         static const std::pair<double, double> kRanges[] = {
            {-1.0, 1.0}, {0.0, 1000.0}, {-1e10, 1e10}, {-3.5, 7.25}, {42.0, 42.0}};
         auto range = kRanges[r.Next() % 5];
         quant = {true, range.first, range.second};
      }
      f.SetQuantized(1 + r.Next() % 32, {T(quant.fMin), T(quant.fMax)});
      break;
   }
   default: break;
   }
}

/// Random column representations for `field` and every field below it: one
/// that ROOT accepts for the field's type (half the time), and now and then
/// reduced precision for reals. Field types do not list the representations
/// they accept publicly, so candidates are tried in a random order.
inline void Represent(ROOT::RFieldBase &field, Rng &r, QuantRange &quant, bool switching)
{
   using T = ROOT::ENTupleColumnType;
   using Selection = ROOT::RFieldBase::RColumnRepresentations::Selection_t;
   if (r.Next() % 2 == 0) {
      std::vector<Selection> candidates;
      for (int k = int(T::kIndex64); k < int(T::kReal32Trunc); ++k)
         candidates.push_back({{T(k)}});
      for (auto index : {T::kIndex64, T::kIndex32, T::kSplitIndex64, T::kSplitIndex32})
         candidates.push_back({{index, T::kChar}});
      for (std::size_t i = candidates.size(); i > 1; --i)
         std::swap(candidates[i - 1], candidates[r.Next() % i]);
      // The first two that ROOT accepts; now and then (if `switching`) the
      // field keeps both, and the writer switches between them from cluster
      // to cluster (see SwitchRepresentations).
      Selection accepted;
      for (const auto &c : candidates) {
         try {
            field.SetColumnRepresentatives(c);
            accepted.push_back(c[0]);
            if (accepted.size() == 2)
               break;
         } catch (const ROOT::RException &) {
         }
      }
      if (!accepted.empty())
         field.SetColumnRepresentatives(switching && accepted.size() == 2 && r.Next() % 3 == 0 ? accepted
                                                                                             : Selection{accepted[0]});
   }
   if (auto f = dynamic_cast<ROOT::RRealField<float> *>(&field))
      ReducePrecision(*f, r, quant);
   else if (auto d = dynamic_cast<ROOT::RRealField<double> *>(&field))
      ReducePrecision(*d, r, quant);
   for (auto *sub : field.GetMutableSubfields())
      Represent(*sub, r, quant, switching);
}

template <typename T>
std::unique_ptr<ROOT::RFieldBase> RandomField(std::size_t k, Rng &r, bool represent, bool switching, QuantRange &quant)
{
   const std::string name = "f" + std::to_string(k);
   std::unique_ptr<ROOT::RFieldBase> field;
   try {
      field = std::make_unique<ROOT::RField<T>>(name);
   } catch (const ROOT::RException &) {
      // A class stored with ROOT's streamer has no typed field: ROOT makes
      // its field from the type's name.
      field = ROOT::RFieldBase::Create(name, ROOT::RField<T>::TypeName()).Unwrap();
   }
   if (represent)
      Represent(*field, r, quant, switching);
   return field;
}

/// The fields at and below `field` that have more than one column
/// representation to switch between.
inline void Switching(ROOT::RFieldBase &field, std::vector<ROOT::RFieldBase *> &out)
{
   if (field.GetColumnRepresentatives().size() > 1)
      out.push_back(&field);
   for (auto *sub : field.GetMutableSubfields())
      Switching(*sub, out);
}

/// Ends the cluster and gives each field of `fields` a random one of its
/// column representations for the next: the columns of the others are
/// suppressed there.
template <typename Writer>
void SwitchRepresentations(Writer &writer, const std::vector<ROOT::RFieldBase *> &fields, Rng &r)
{
   writer.CommitCluster();
   for (auto *field : fields) {
      const auto n = field->GetColumnRepresentatives().size();
      ROOT::Internal::RFieldRepresentationModifier::SetPrimaryColumnRepresentation(*field, r.Next() % n);
   }
}

/// Field name mapping by the longest prefix, taken at a field boundary.
struct PathMapping {
   std::vector<std::pair<std::string, std::string>> fRules;
   std::string operator()(const std::string &name) const
   {
      const std::pair<std::string, std::string> *best = nullptr;
      for (const auto &rule : fRules) {
         const auto &from = rule.first;
         const bool matches = name.compare(0, from.size(), from) == 0 &&
                              (name.size() == from.size() || name[from.size()] == '.');
         if (matches && (!best || from.size() > best->first.size()))
            best = &rule;
      }
      return best ? best->second + name.substr(best->first.size()) : name;
   }
};

/// A member to project below the top-level field `field` (see Project),
/// reached through records and collections (of one item field) only; the
/// collections on the way go to `collections`, outermost first. Null if
/// there is none.
inline const ROOT::RFieldBase *ProjectableMember(const ROOT::RFieldBase &field,
                                                 std::vector<const ROOT::RFieldBase *> &collections, Rng &r)
{
   using Path = std::vector<const ROOT::RFieldBase *>;
   // Records with members, each with the collections above it.
   std::vector<std::pair<const ROOT::RFieldBase *, Path>> records;
   std::vector<std::pair<const ROOT::RFieldBase *, Path>> todo{{&field, {}}};
   while (!todo.empty()) {
      auto [f, path] = todo.back();
      todo.pop_back();
      const auto subfields = f->GetConstSubfields();
      if (f->GetStructure() == ROOT::ENTupleStructure::kRecord && !subfields.empty()) {
         records.emplace_back(f, path);
         for (const auto *sub : subfields)
            todo.emplace_back(sub, path);
      } else if (f->GetStructure() == ROOT::ENTupleStructure::kCollection && subfields.size() == 1) {
         path.push_back(f);
         todo.emplace_back(subfields[0], path);
      }
   }
   if (records.empty())
      return nullptr;
   const auto &[record, path] = records[r.Next() % records.size()];
   collections = path;
   const auto members = record->GetConstSubfields();
   return members[r.Next() % members.size()];
}

/// Projections of the top-level field `k` (of `field`) that `project` asks
/// for, added through `model` (a model or its updater): bit k a field `pK`
/// of the same type, bit k + 8 the cardinality `cK` of a collection, bit
/// k + 16 a field `mK` of one member of a record below it (see
/// ProjectableMember): of the member's type, in a vector for each collection
/// on the way. Those ROOT refuses are left out.
/// What a random RNTuple holds beyond its drawn options (see WriteRandom).
struct RandomFacts {
   /// Fields that switch column representation between clusters.
   std::size_t fSwitching = 0;
   /// Projections of a member of a record, and of a collection's records.
   std::size_t fMembers = 0;
   std::size_t fItemMembers = 0;
   std::string Json() const
   {
      return "{\"switching\": " + std::to_string(fSwitching) + ", \"members\": " + std::to_string(fMembers) +
             ", \"item_members\": " + std::to_string(fItemMembers) + "}";
   }
};

template <typename Model>
void Project(Model &model, const ROOT::RFieldBase &field, std::size_t k, unsigned project, Rng &r,
             RandomFacts &facts)
{
   const auto source = "f" + std::to_string(k);
   if (project & (1u << (k + 16))) {
      std::vector<const ROOT::RFieldBase *> collections;
      if (auto member = ProjectableMember(field, collections, r)) {
         // A vector level for each collection on the way, mapped to it; the
         // innermost items map to the member.
         const auto name = "m" + std::to_string(k);
         auto type = member->GetTypeName();
         PathMapping mapping;
         auto target = name;
         for (const auto *collection : collections) {
            type = "std::vector<" + type + ">";
            mapping.fRules.emplace_back(target, collection->GetQualifiedFieldName());
            target += "._0";
         }
         mapping.fRules.emplace_back(target, member->GetQualifiedFieldName());
         if (auto created = RFieldBase::Create(name, type)) {
            if (auto added = model.AddProjectedField(created.Unwrap(), mapping))
               ++(collections.empty() ? facts.fMembers : facts.fItemMembers);
         }
      }
   }
   if (project & (1u << k)) {
      const auto name = "p" + std::to_string(k);
      if (auto created = RFieldBase::Create(name, field.GetTypeName())) {
         if (auto added = model.AddProjectedField(created.Unwrap(), PrefixMapping{name, source})) {
         }
      }
   }
   if ((project & (1u << (k + 8))) && field.GetStructure() == ROOT::ENTupleStructure::kCollection) {
      const auto name = "c" + std::to_string(k);
      const auto type = k % 2 ? "ROOT::RNTupleCardinality<std::uint64_t>" : "ROOT::RNTupleCardinality<std::uint32_t>";
      if (auto added = model.AddProjectedField(RFieldBase::Create(name, type).Unwrap(), PrefixMapping{name, source})) {
      }
   }
}

/// Storage options of WriteRandom, or-ed.
enum EStorage : unsigned {
   kNoChecksums = 1,
   kNoSamePageMerging = 2,
   kUnbuffered = 4,
   /// A cluster, and its cluster group, end after about every 64th entry.
   kClusterGroups = 8,
   /// Written by a parallel writer through three fill contexts, each entry
   /// through a random one, so that their clusters interleave (no late
   /// fields: the parallel writer cannot extend its model).
   kParallel = 16,
   /// Each field keeps one column representation (none switches).
   kOneRepresentation = 32,
};

/// Fills `n` entries of random values into three fill contexts of a
/// parallel writer, each entry into a random context, which now and then
/// flushes its cluster.
template <typename... Ts, std::size_t... I>
void FillInParallel(RNTupleParallelWriter &writer, int n, Rng &rng, Rng &layout,
                    const std::array<QuantRange, sizeof...(Ts)> &quant, unsigned absent, std::index_sequence<I...>)
{
   struct Context {
      std::shared_ptr<ROOT::RNTupleFillContext> fContext;
      std::unique_ptr<ROOT::REntry> fEntry;
      std::tuple<std::shared_ptr<Ts>...> fValues;
   };
   std::vector<Context> contexts(3);
   for (auto &c : contexts) {
      c.fContext = writer.CreateFillContext();
      c.fEntry = c.fContext->CreateEntry();
      ((absent >> I & 1u ? (void)0 : (void)(std::get<I>(c.fValues) = c.fEntry->template GetPtr<Ts>("f" + std::to_string(I)))),
       ...);
   }
   for (int i = 0; i < n; ++i) {
      auto &c = contexts[layout.Next() % contexts.size()];
      ((std::get<I>(c.fValues) ? (void)(gQuant = quant[I], Fill<Ts>::Do(*std::get<I>(c.fValues), rng)) : (void)0), ...);
      gQuant = {};
      c.fContext->Fill(*c.fEntry);
      if (layout.Next() % 32 == 0)
         c.fContext->FlushCluster();
   }
   for (auto &c : contexts)
      c.fContext->FlushCluster();
}

template <typename... Ts, std::size_t... I>
RandomFacts WriteRandomImpl(TFile &file, const char *name, int n, std::size_t page, std::size_t cluster,
                     int compression, std::uint64_t seed, std::size_t late, int at, bool commitFirst,
                     bool represent, unsigned storage, std::uint64_t maxKeySize, unsigned project,
                     unsigned absent, std::uint64_t valueSeed, std::index_sequence<I...>)
{
   constexpr std::size_t N = sizeof...(Ts);
   // Representations draw from their own sequence, so that the values are
   // those of Write with the same seed.
   Rng layout(seed ^ 0x5eedfaceull);
   std::array<QuantRange, N> quant{};
   RandomFacts facts;
   std::vector<std::unique_ptr<ROOT::RFieldBase>> fields;
   const bool maySwitch = !(storage & kOneRepresentation);
   (fields.push_back(RandomField<Ts>(I, layout, represent, maySwitch, quant[I])), ...);
   const std::size_t early = N - std::min(late, N);
   auto model = RNTupleModel::Create();
   const auto present = [absent](std::size_t k) { return !(absent >> k & 1u); };
   for (std::size_t k = 0; k < early; ++k) {
      if (!present(k))
         continue;
      const auto &field = *fields[k];
      model->AddField(std::move(fields[k]));
      Project(*model, field, k, project, layout, facts);
   }
   RNTupleWriteOptions options;
   options.SetCompression(compression);
   options.SetInitialUnzippedPageSize(16);
   options.SetMaxUnzippedPageSize(page);
   options.SetApproxZippedClusterSize(cluster);
   if (storage & kNoChecksums)
      options.SetEnablePageChecksums(false);
   if (storage & kNoSamePageMerging)
      options.SetEnableSamePageMerging(false);
   if (storage & kUnbuffered)
      options.SetUseBufferedWrite(false);
   if (maxKeySize > 0)
      ROOT::Internal::RNTupleWriteOptionsManip::SetMaxKeySize(options, maxKeySize);
   Rng rng(valueSeed);
   if (storage & kParallel) {
      auto writer = RNTupleParallelWriter::Append(std::move(model), name, file, options);
      FillInParallel<Ts...>(*writer, n, rng, layout, quant, absent, std::index_sequence<I...>{});
      return facts;
   }
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   std::tuple<std::shared_ptr<Ts>...> values;
   auto bind = [&](std::size_t upto) {
      const auto &entry = writer->GetModel().GetDefaultEntry();
      ((I < upto && present(I) ? (void)(std::get<I>(values) = entry.GetPtr<Ts>("f" + std::to_string(I))) : (void)0),
       ...);
   };
   bind(early);
   // The fields that switch representation, as the writer's model holds them.
   std::vector<ROOT::RFieldBase *> switching;
   auto findSwitching = [&](std::size_t from, std::size_t upto) {
      for (std::size_t k = from; k < upto; ++k)
         if (present(k))
            Switching(const_cast<ROOT::RFieldBase &>(writer->GetModel().GetConstField("f" + std::to_string(k))), switching);
   };
   findSwitching(0, early);
   for (int i = 0; i < n; ++i) {
      if (early < N && i == at) {
         // The late fields join here: after a committed cluster, or in the
         // middle of one (their columns then start past the cluster's first
         // entry).
         if (commitFirst)
            writer->CommitCluster();
         auto updater = writer->CreateModelUpdater();
         updater->BeginUpdate();
         for (std::size_t k = early; k < N; ++k) {
            if (!present(k))
               continue;
            const auto &field = *fields[k];
            updater->AddField(std::move(fields[k]));
            Project(*updater, field, k, project, layout, facts);
         }
         updater->CommitUpdate();
         bind(N);
         findSwitching(early, N);
      }
      if (!switching.empty() && i > 0 && layout.Next() % 8 == 0)
         SwitchRepresentations(*writer, switching, layout);
      ((std::get<I>(values) ? (void)(gQuant = quant[I], Fill<Ts>::Do(*std::get<I>(values), rng)) : (void)0), ...);
      gQuant = {};
      writer->Fill();
      if ((storage & kClusterGroups) && layout.Next() % 64 == 0)
         writer->CommitCluster(/*commitClusterGroup=*/true);
   }
   facts.fSwitching = switching.size();
   return facts;
}

/// Like Write, with the last `late` fields added by a model extension before
/// entry `at` (after committing the cluster so far if `commitFirst`), with
/// random column representations if `represent`, the storage options
/// `storage` (EStorage), unless 0 keys of at most `maxKeySize` bytes, and
/// the projections `project` (see Project), without the fields whose bits
/// `absent` sets, and values drawn from `valueSeed` if not 0 (the layout,
/// representations included, always from `seed`). Returns what the RNTuple holds beyond those options
/// (RandomFacts), as JSON.
template <typename... Ts>
std::string WriteRandom(TFile &file, const char *name, int n, std::size_t page, std::size_t cluster, int compression,
                 std::uint64_t seed, std::size_t late, int at, bool commitFirst, bool represent, unsigned storage,
                 std::uint64_t maxKeySize, unsigned project, unsigned absent = 0, std::uint64_t valueSeed = 0)
{
   return WriteRandomImpl<Ts...>(file, name, n, page, cluster, compression, seed, late, at, commitFirst, represent,
                                 storage, maxKeySize, project, absent, valueSeed ? valueSeed : seed,
                                 std::index_sequence_for<Ts...>{})
      .Json();
}

/// Merges the RNTuples `name` of the files `sources` into a new file `path`
/// as `hadd` does (TFileMerger): in the merging mode `mode` (Filter, Union
/// or Strict), recompressed to `compression`, or with the first source's
/// compression if it is negative. Throws if the merger fails.
inline void MergeRandom(const std::vector<std::string> &sources, const std::string &path, const std::string &mode,
                        int compression)
{
   TFileMerger merger(kFALSE, kFALSE);
   merger.SetPrintLevel(0);
   TString options = ("rntuple.MergingMode=" + mode).c_str();
   if (compression < 0)
      options += " FirstSrcCompression";
   merger.SetMergeOptions(options);
   if (!merger.OutputFile(path.c_str(), "RECREATE", compression < 0 ? 505 : compression))
      throw std::runtime_error("cannot create " + path);
   for (const auto &source : sources)
      merger.AddFile(source.c_str(), kFALSE);
   if (!merger.Merge())
      throw std::runtime_error("the merger fails");
}

/// Appends an RNTuple `name` of `n` entries of random values of the types
/// `Ts` (fields f0, f1, ...) to `file`, in pages of at most `page` bytes and
/// clusters of about `cluster` compressed bytes.
template <typename... Ts>
void Write(TFile &file, const char *name, int n, std::size_t page, std::size_t cluster, int compression,
           std::uint64_t seed)
{
   auto model = RNTupleModel::Create();
   std::size_t k = 0;
   // A braced list evaluates its elements in order: fields f0, f1, ...
   std::tuple<std::shared_ptr<Ts>...> fields{model->MakeField<Ts>("f" + std::to_string(k++))...};
   RNTupleWriteOptions options;
   options.SetCompression(compression);
   options.SetInitialUnzippedPageSize(16);
   options.SetMaxUnzippedPageSize(page);
   options.SetApproxZippedClusterSize(cluster);
   auto writer = RNTupleWriter::Append(std::move(model), name, file, options);
   Rng rng(seed);
   for (int i = 0; i < n; ++i) {
      std::apply([&](auto &...f) { (Fill<std::decay_t<decltype(*f)>>::Do(*f, rng), ...); }, fields);
      writer->Fill();
   }
}

} // namespace nested

void WriteNested(const std::string &path)
{
   using namespace std;
   auto file = Recreate(path);
   // An optional variant has no validity of its own in Arrow: its nulls
   // point at nulls in the variant's first alternative.
   nested::Write<optional<variant<int8_t, uint64_t>>,
                 variant<bitset<65>, optional<variant<int8_t, uint64_t>>, vector<int16_t>>,
                 unique_ptr<variant<float, string>>, vector<optional<variant<int32_t, string>>>,
                 optional<variant<vector<float>, optional<double>>>>(*file, "OptionalVariant", 600, 64,
                                                                    1000, 101, 62);
   nested::Write<ROOT::RVec<uint32_t>, pair<optional<bool>, vector<vector<double>>>>(*file, "VectorOfVectors", 300,
                                                                                200, 5000, 505, 1);
   nested::Write<vector<vector<optional<float>>>, array<bitset<8>, 3>, tuple<string, optional<int16_t>>>(
      *file, "OptionalsInVectors", 400, 64, 1000, 207, 5);
   nested::Write<variant<char, variant<int16_t, int8_t>, vector<ROOT::RVec<float>>>, vector<bitset<65>>, string,
                 vector<vector<optional<char>>>>(*file, "VariantsOfVariants", 300, 16, 2000, 404, 63);
   nested::Write<array<vector<variant<string, array<uint8_t, 2>>>, 2>, optional<array<optional<int64_t>, 3>>>(
      *file, "ArraysOfCollections", 300, 128, 3000, 505, 7);
   // Optional records holding a variant: a batch of only empty entries has
   // no values to take from.
   nested::Write<unique_ptr<pair<variant<bool, int8_t, uint16_t>, vector<string>>>,
                 optional<pair<variant<float, int32_t, int64_t>, int16_t>>, variant<optional<int32_t>, string>>(
      *file, "OptionalRecordsOfVariants", 300, 64, 2000, 404, 695);
   // Tuples inside collections: in the path f0._0._1, `_0` names the
   // tuple's only member, not the collection's item.
   nested::Write<vector<optional<tuple<pair<int16_t, float>>>>, string>(*file, "TuplesInCollections", 200, 64, 2000,
                                                                        505, 11);
}

} // namespace fixtures
'''



# ----------------------------------------------------------------------------------------------------------------------
# Python driver
# ----------------------------------------------------------------------------------------------------------------------

ROOT = None  # the ROOT module, imported by init_root()


def load_dictionary(build_dir, stem, header, linkdef):
    """Compiles a dictionary of the types in `header` (C++ text) selected by
    `linkdef` with rootcling into build_dir/lib<stem>.so, loads it and
    includes the header in the interpreter."""
    rootsys = os.path.dirname(os.path.dirname(os.path.abspath(ROOT.__file__)))
    rootsys = os.path.join(rootsys, "ROOT")
    with open(os.path.join(build_dir, stem + ".hxx"), "w") as f:
        f.write(header)
    with open(os.path.join(build_dir, stem + "LinkDef.h"), "w") as f:
        f.write(linkdef)
    lib = os.path.join(build_dir, "lib%s.so" % stem)
    subprocess.run(
        [os.path.join(rootsys, "bin", "rootcling"), "-f", stem + "Dict.cxx", "-s", lib,
         stem + ".hxx", stem + "LinkDef.h"],
        cwd=build_dir, check=True)
    subprocess.run(
        ["c++", "-std=c++17", "-O1", "-fPIC", "-shared", "-fsigned-char", "-pthread",
         "-I" + os.path.join(rootsys, "include"), "-I" + build_dir, stem + "Dict.cxx", "-o", lib,
         "-L" + os.path.join(rootsys, "lib"), "-lCore", "-lRIO"],
        cwd=build_dir, check=True)
    ROOT.gInterpreter.AddIncludePath(build_dir)
    if ROOT.gSystem.Load(lib) < 0:
        sys.exit("cannot load " + lib)
    if not ROOT.gInterpreter.Declare('#include "%s.hxx"\n' % stem):
        sys.exit("cannot declare " + stem)


def init_root(build_dir):
    """Imports ROOT, builds and loads the dictionary of the fixture classes, declares the C++ code."""
    global ROOT
    warnings.filterwarnings("ignore", message=r"(?s).*alpha stage")
    import ROOT as root_module

    ROOT = root_module
    ROOT.gROOT.SetBatch(True)
    ROOT.gErrorIgnoreLevel = ROOT.kWarning

    # libPhysics: TLorentzVector, stored in classes.root through its streamer.
    for library in ("libROOTNTuple", "libROOTNTupleUtil", "libTree", "libPhysics"):
        if ROOT.gSystem.Load(library) < 0:
            sys.exit("cannot load " + library)
    load_dictionary(build_dir, "FixtureTypes", CLASSES_HXX, LINKDEF_H)
    for name, code in (("dumper", DUMPER_CXX), ("writers", WRITERS_CXX)):
        if not ROOT.gInterpreter.Declare(code):
            sys.exit("cannot declare the %s C++ code" % name)


def dump(path):
    """ROOT's reading of every RNTuple in the file, as a dict in the golden format"""
    text = ROOT.rntdump.DumpFile(path, os.path.basename(path))
    if not isinstance(text, (str, bytes)):
        text = str(text)
    return json.loads(text)


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def format_golden(golden):
    """JSON text with one line per field and per entry: readable diffs, no huge indentation"""
    lines = ["{", '  "file": %s,' % _dumps(golden["file"]), '  "ntuples": [']
    for i, ntuple in enumerate(golden["ntuples"]):
        lines.append("    {")
        lines.extend(_format_ntuple_body(ntuple, "      "))
        lines.append("    }" + ("," if i + 1 < len(golden["ntuples"]) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _format_ntuple_body(ntuple, ind):
    items = []
    for key, value in ntuple.items():
        if key == "fields":
            inner = [ind + "  " + _dumps(f) for f in value]
            items.append([ind + '"fields": ['] + _join(inner) + [ind + "]"])
        elif key in ("values", "values_rle"):
            inner = []
            for name, column in value.items():
                rows = [ind + "    " + _dumps(v) for v in column]
                inner.append([ind + "  %s: [" % _dumps(name)] + _join(rows) + [ind + "  ]"])
            items.append([ind + '"%s": {' % key] + _join_blocks(inner) + [ind + "}"])
        elif key == "unchecked":
            inner = [ind + "  %s: %s" % (_dumps(k), _dumps(v)) for k, v in value.items()]
            items.append([ind + '"unchecked": {'] + _join(inner) + [ind + "}"])
        elif key == "attribute_sets":
            blocks = []
            for attr in value:
                blocks.append([ind + "  {"] + _format_ntuple_body(attr, ind + "    ") + [ind + "  }"])
            items.append([ind + '"attribute_sets": ['] + _join_blocks(blocks) + [ind + "]"])
        else:
            items.append([ind + "%s: %s" % (_dumps(key), _dumps(value))])
    return _join_blocks(items)


def _join(lines):
    return [line + ("," if i + 1 < len(lines) else "") for i, line in enumerate(lines)]


def _join_blocks(blocks):
    result = []
    for i, block in enumerate(blocks):
        block = list(block)
        if i + 1 < len(blocks):
            block[-1] += ","
        result.extend(block)
    return result


def summarize(golden):
    for nt in golden["ntuples"]:
        unchecked = nt.get("unchecked", {})
        print("    %-22s %8d entries %4d fields%s" % (
            nt["path"], nt["entries"], len(nt["fields"]),
            (", unchecked: " + ", ".join(sorted(unchecked))) if unchecked else ""))
        for attr in nt.get("attribute_sets", []):
            print("      attribute set %-12s %4d entries %4d fields" % (
                attr["name"], attr["entries"], len(attr["fields"])))


def write_golden(root_path):
    golden = dump(root_path)
    json_path = os.path.splitext(root_path)[0] + ".json"
    with open(json_path, "w", encoding="utf-8") as f:
        f.write(format_golden(golden))
    print("%s (%d bytes) -> %s" % (os.path.basename(root_path), os.path.getsize(root_path),
                                   os.path.basename(json_path)))
    summarize(golden)


# One function per fixture; each writes tests/data/<name>.root (and maybe more files) with ROOT.

def fixture_fundamentals(out):
    ROOT.fixtures.WriteFundamentals(os.path.join(out, "fundamentals.root"))
    return ["fundamentals.root"]


def fixture_compression(out):
    ROOT.fixtures.WriteCompression(os.path.join(out, "compression.root"))
    ROOT.fixtures.WriteBigPage(os.path.join(out, "compression_bigpage.root"))
    return ["compression.root", "compression_bigpage.root"]


def fixture_reals(out):
    ROOT.fixtures.WriteReals(os.path.join(out, "reals.root"))
    return ["reals.root"]


def fixture_containers(out):
    ROOT.fixtures.WriteContainers(os.path.join(out, "containers.root"))
    return ["containers.root"]


def fixture_classes(out):
    ROOT.fixtures.WriteClasses(os.path.join(out, "classes.root"))
    return ["classes.root"]


def fixture_extension(out):
    ROOT.fixtures.WriteExtension(os.path.join(out, "extension.root"))
    return ["extension.root"]


def fixture_clusters(out):
    ROOT.fixtures.WriteClusters(os.path.join(out, "clusters.root"))
    return ["clusters.root"]


def fixture_empty(out):
    ROOT.fixtures.WriteEmpty(os.path.join(out, "empty.root"))
    return ["empty.root"]


def fixture_multi(out):
    ROOT.fixtures.WriteMulti(os.path.join(out, "multi.root"))
    return ["multi.root"]


def fixture_projections(out):
    ROOT.fixtures.WriteProjections(os.path.join(out, "projections.root"))
    return ["projections.root"]


def fixture_importer(out, build_dir):
    tree_path = os.path.join(build_dir, "nanoaod_ttree.root")
    ROOT.fixtures.WriteNanoTree(tree_path)
    target = os.path.join(out, "importer.root")
    if os.path.exists(target):
        os.remove(target)  # the importer refuses to overwrite
    ROOT.fixtures.ImportNanoTree(tree_path, target)
    return ["importer.root"]


def fixture_nested(out):
    ROOT.fixtures.WriteNested(os.path.join(out, "nested.root"))
    return ["nested.root"]


def fixture_merged(out, build_dir):
    # Sources of different compression, merged with recompression; and of
    # the same, merged with their pages copied.
    sources = []
    for part, compression in ((0, 101), (1, 404), (0, 505), (1, 505)):
        sources.append(os.path.join(build_dir, "merge_source_%d.root" % len(sources)))
        ROOT.fixtures.WriteMergeSource(sources[-1], part, compression)
    # Merged as hadd merges, in Union mode (see MergeRandom).
    ROOT.fixtures.nested.MergeRandom(sources[:2], os.path.join(out, "merged.root"), "Union", 505)
    ROOT.fixtures.nested.MergeRandom(sources[2:], os.path.join(out, "merged_fast.root"), "Union", -1)
    return ["merged.root", "merged_fast.root"]


def fixture_big_pages(out):
    ROOT.fixtures.WriteBigPages(os.path.join(out, "big_pages.root"))
    return ["big_pages.root"]


def fixture_attributes(out):
    ROOT.fixtures.WriteAttributes(os.path.join(out, "attributes.root"))
    return ["attributes.root"]


FIXTURES = {
    "fundamentals": fixture_fundamentals,
    "compression": fixture_compression,
    "reals": fixture_reals,
    "containers": fixture_containers,
    "classes": fixture_classes,
    "extension": fixture_extension,
    "clusters": fixture_clusters,
    "empty": fixture_empty,
    "multi": fixture_multi,
    "projections": fixture_projections,
    "importer": fixture_importer,
    "attributes": fixture_attributes,
    "nested": fixture_nested,
    "merged": fixture_merged,
    "big_pages": fixture_big_pages,
}


def write_corpus_goldens(corpus_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(corpus_dir)):
        if not name.endswith(".root"):
            continue
        start = time.time()
        golden = dump(os.path.join(corpus_dir, name))
        target = os.path.join(out_dir, os.path.splitext(name)[0] + ".json.gz")
        with gzip.GzipFile(target, "wb", mtime=0) as f:
            f.write(format_golden(golden).encode("utf-8"))
        print("%s -> corpus/%s (%d bytes, %.1f s)" % (name, os.path.basename(target), os.path.getsize(target),
                                                     time.time() - start))
        summarize(golden)
        for nt in golden["ntuples"]:
            for field, reason in nt.get("unchecked", {}).items():
                print("      unchecked %s: %s" % (field, reason))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", metavar="DIR", help="write corpus/<stem>.json.gz for every .root file in DIR")
    parser.add_argument("fixtures", nargs="*", help="fixtures to write (default: all): " + ", ".join(FIXTURES))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rntuple-fixtures-") as build_dir:
        init_root(build_dir)
        if args.corpus:
            write_corpus_goldens(args.corpus, os.path.join(HERE, "corpus"))
            return
        for name in args.fixtures or FIXTURES:
            if name not in FIXTURES:
                sys.exit("unknown fixture " + name)
            func = FIXTURES[name]
            start = time.time()
            if func in (fixture_importer, fixture_merged):
                files = func(HERE, build_dir)
            else:
                files = func(HERE)
            for file_name in files:
                write_golden(os.path.join(HERE, file_name))
            print("  [%s: %.1f s]" % (name, time.time() - start))


if __name__ == "__main__":
    main()
