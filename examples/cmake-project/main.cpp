// Compiles a ring all-reduce for a topology file with the library and
// prints the rings it chose and the size of the MSCCL XML it would write.
//   rings TOPOLOGY.yaml
#include "backends/MscclXml.h"
#include "compiler/Pipeline.h"
#include "compiler/topology/TopologyParser.h"

#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  using namespace topocc;
  if (argc != 2) {
    llvm::errs() << "usage: rings TOPOLOGY.yaml\n";
    return 2;
  }
  auto topo = topo::loadTopologyFile(argv[1]);
  if (!topo) {
    llvm::errs() << llvm::toString(topo.takeError());
    return 1;
  }
  CompileRequest req;
  req.channels = 0; // as many rings as the search chooses
  PassLogger log;
  auto compiled = compile(*topo, req, log);
  if (!compiled) {
    llvm::errs() << llvm::toString(compiled.takeError());
    return 1;
  }
  for (const ChannelRing &ring : compiled->rings) {
    llvm::outs() << "ring:";
    for (ir::RankId r : ring.order)
      llvm::outs() << " " << r;
    llvm::outs() << "\n";
  }
  auto xml = backends::mscclXmlToString(compiled->schedule);
  if (!xml) {
    llvm::errs() << llvm::toString(xml.takeError());
    return 1;
  }
  llvm::outs() << compiled->summary << "\nMSCCL XML: " << xml->size()
               << " bytes\n";
  return 0;
}
