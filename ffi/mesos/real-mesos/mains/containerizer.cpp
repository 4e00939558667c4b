// mesos-containerizer for the real-Mesos checks: the `launch` subcommand the
// agent's launchers exec (and the CNI setup one). The `mount` subcommand is
// not in the PyPI binary, so it is absent here.
#include <stout/subcommand.hpp>

#include "slave/containerizer/mesos/isolators/network/cni/cni.hpp"
#include "slave/containerizer/mesos/launch.hpp"

int main(int argc, char** argv) {
  return Subcommand::dispatch("MESOS_CONTAINERIZER_", argc, argv,
                              new mesos::internal::slave::MesosContainerizerLaunch(),
                              new mesos::internal::slave::NetworkCniIsolatorSetup());
}
