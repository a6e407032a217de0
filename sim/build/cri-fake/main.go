// cri-fake: a CRI (v1) server that answers the calls kubeadm makes for its preflight and image
// pulls (RuntimeService.Version/Status, ImageService.ImageFsInfo/ImageStatus/PullImage), backed by
// k8s.io/cri-client/pkg/fake (the fake kubemark's hollow node uses). Every PullImage succeeds and
// the image is then reported present. One per simulated host; see ../REAL-KUBEADM.md §5.
//
//	cri-fake --endpoint unix:///path/to/cri.sock
//
// Runs until SIGTERM or SIGINT, then stops the gRPC server and removes the socket.
// Built by ../build-cri-fake.sh (which supplies the go.mod).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/cri-client/pkg/fake"
)

func main() {
	endpoint := flag.String("endpoint", "", "where to listen, unix:///absolute/path.sock")
	flag.Parse()
	if flag.NArg() != 0 || !strings.HasPrefix(*endpoint, "unix:///") {
		fmt.Fprintln(os.Stderr, "usage: cri-fake --endpoint unix:///absolute/path.sock")
		os.Exit(2)
	}
	sock := strings.TrimPrefix(*endpoint, "unix://")

	// Subscribe before listening so that a SIGTERM right after start still cleans up.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	rt := fake.NewFakeRemoteRuntime()
	// A pulled image is reported with this size: with the default 0, cri-client's ImageStatus
	// rejects it ("Id or size of image ... is not set") and kubeadm pulls it again on every run.
	rt.ImageService.SetFakeImageSize(1 << 20)
	if err := rt.Start(*endpoint); err != nil {
		fmt.Fprintf(os.Stderr, "cri-fake: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "cri-fake: serving CRI on %s (pid %d)\n", *endpoint, os.Getpid())

	s := <-sigs
	rt.Stop()
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		fmt.Fprintf(os.Stderr, "cri-fake: removing %s: %v\n", sock, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "cri-fake: %s: stopped, removed %s\n", s, sock)
}
