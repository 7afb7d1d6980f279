// dp-probe is a TEST stand-in for the kubelet's side of the device plugin API
// (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1, the version NVIDIA's plugin pins), used by
// tests/unit/roles/test_gpu_stack_plugin.py before the plugin meets the real kubelet on lab-node-1. The lab
// never runs it. Like the kubelet it serves Registration on <dir>/kubelet.sock, and for each
// plugin that registers it dials <dir>/<endpoint> and follows ListAndWatch. It prints one JSON
// object a line: {"event":"register",...} and {"event":"devices","count":N,"healthy":N,...};
// with -allocate N it asks the plugin to Allocate N healthy devices after the first list and
// prints {"event":"allocate","envs":{...}}. A stream that ends prints {"event":"ended"}; the
// probe keeps serving, so a restarted plugin registers again.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

type registration struct {
	pluginapi.UnimplementedRegistrationServer
	got chan *pluginapi.RegisterRequest
}

func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.got <- req
	return &pluginapi.Empty{}, nil
}

var out = json.NewEncoder(os.Stdout)

func say(v map[string]interface{}) {
	if err := out.Encode(v); err != nil {
		os.Exit(3)
	}
}

func fail(format string, args ...interface{}) {
	say(map[string]interface{}{"event": "error", "message": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

func follow(dir string, req *pluginapi.RegisterRequest, allocate int) {
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, req.Endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail("dial %s: %v", req.Endpoint, err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	defer func() { _ = conn.Close() }()
	stream, err := client.ListAndWatch(context.Background(), &pluginapi.Empty{})
	if err != nil {
		say(map[string]interface{}{"event": "ended", "resource": req.ResourceName, "error": err.Error()})
		return
	}
	for first := true; ; first = false {
		resp, err := stream.Recv()
		if err != nil {
			// as the kubelet: the plugin went away (a restart re-registers); keep serving
			say(map[string]interface{}{"event": "ended", "resource": req.ResourceName, "error": err.Error()})
			return
		}
		ids, healthy := []string{}, []string{}
		health := map[string]string{}
		for _, d := range resp.Devices {
			ids = append(ids, d.ID)
			health[d.ID] = d.Health
			if d.Health == pluginapi.Healthy {
				healthy = append(healthy, d.ID)
			}
		}
		sort.Strings(ids)
		sort.Strings(healthy)
		say(map[string]interface{}{"event": "devices", "resource": req.ResourceName, "count": len(ids),
			"healthy": len(healthy), "ids": ids, "health": health})
		if first && allocate > 0 && len(healthy) >= allocate {
			ar, err := client.Allocate(context.Background(), &pluginapi.AllocateRequest{
				ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: healthy[:allocate]}}})
			if err != nil {
				say(map[string]interface{}{"event": "allocate", "error": err.Error()})
				continue
			}
			for _, c := range ar.ContainerResponses {
				say(map[string]interface{}{"event": "allocate", "ids": healthy[:allocate], "envs": c.Envs,
					"annotations": c.Annotations, "devices": c.Devices, "mounts": c.Mounts})
			}
		}
	}
}

func main() {
	dir := flag.String("dir", pluginapi.DevicePluginPath, "the device plugin folder (the kubelet's is hard-coded)")
	allocate := flag.Int("allocate", 0, "after the first list, Allocate this many healthy devices")
	flag.Parse()
	sock := filepath.Join(*dir, "kubelet.sock")
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		fail("listen %s: %v", sock, err)
	}
	reg := &registration{got: make(chan *pluginapi.RegisterRequest, 4)}
	server := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(server, reg)
	go func() { _ = server.Serve(lis) }()
	say(map[string]interface{}{"event": "listening", "socket": sock})
	for req := range reg.got {
		say(map[string]interface{}{"event": "register", "resource": req.ResourceName, "endpoint": req.Endpoint,
			"version": req.Version, "options": req.Options})
		go follow(*dir, req, *allocate)
	}
}
