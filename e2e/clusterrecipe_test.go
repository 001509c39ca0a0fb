package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// clusterRecipe is every command of the cluster recipe, in the README
// and in docs/cluster.md; TestClusterRecipe checks that both say exactly
// this, then runs it.
var clusterRecipe = []string{
	"BOOMERANG_ADMIN_PASSWORD=admin-secret-1 go run ./cmd/boomerang --embed-etcd --etcd 127.0.0.1:2379 --node-id 1 --data-dir node1",
	"BOOMERANG_ADMIN_PASSWORD=admin-secret-1 go run ./cmd/boomerang --etcd 127.0.0.1:2379 --node-id 2 --data-dir node2 " +
		"--tcp-addr 127.0.0.1:7170 --http-addr 127.0.0.1:7171 --cluster-addr 127.0.0.1:7172",
	"BOOMERANG_ADMIN_PASSWORD=admin-secret-1 go run ./cmd/boomerang --etcd 127.0.0.1:2379 --node-id 3 --data-dir node3 " +
		"--tcp-addr 127.0.0.1:7270 --http-addr 127.0.0.1:7271 --cluster-addr 127.0.0.1:7272",
	"go build -o . ./cmd/boomtool",
	"export BOOMERANG_CLIENT=admin BOOMERANG_PASSWORD=admin-secret-1",
	"./boomtool cluster status",
	"./boomtool --addr 127.0.0.1:7270 set 'hello, cluster' --delay 1h --group demo",
	"./boomtool --addr 127.0.0.1:7170 list",
	"./boomtool cluster drain 3",
	"./boomtool cluster shards",
}

// The cluster recipe run as written, in its order, in a fresh directory:
// three nodes, the first with the embedded etcd, then boomtool against
// them. Only the fixed ports are replaced by free ones (the first node's
// default ones given explicitly), and the test waits for the cluster to
// settle before the first boomtool command, as a reader would.
func TestClusterRecipe(t *testing.T) {
	for _, doc := range []string{"../README.md", "../docs/cluster.md"} {
		if got := docCommands(t, doc, "## A cluster on one machine"); strings.Join(got, "\n") != strings.Join(clusterRecipe, "\n") {
			t.Fatalf("%s's cluster recipe is\n%s\nbut this test runs\n%s", doc, strings.Join(got, "\n"), strings.Join(clusterRecipe, "\n"))
		}
	}
	dir := t.TempDir()
	ports := freePorts{t: t, of: map[string]string{}}
	var nodes []*server
	var exported []string
	settled := false
	for _, line := range clusterRecipe {
		env, words := shellWords(t, line)
		switch {
		case words[0] == "go" && words[1] == "run":
			args := slices.Clone(words[3:])
			for i, w := range args {
				if strings.HasPrefix(w, "127.0.0.1:") {
					args[i] = ports.free(w)
				}
			}
			if !slices.Contains(args, "--tcp-addr") { // the defaults
				args = append(args, "--tcp-addr", ports.free("127.0.0.1:7070"), "--http-addr", ports.free("127.0.0.1:7071"),
					"--cluster-addr", ports.free("127.0.0.1:7072"), "--etcd-peer-addr", ports.free("127.0.0.1:2380"))
			}
			cmd := exec.Command(filepath.Join(binDir, "boomerang"), args...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
			nodes = append(nodes, launch(t, cmd, filepath.Join(dir, args[slices.Index(args, "--data-dir")+1])))
		case words[0] == "go" && words[1] == "build":
			// boomtool is built already.
		case words[0] == "export":
			exported = append(exported, words[1:]...)
		default: // ./boomtool
			if !settled {
				c := login(t, nodes[0], "admin", "admin-secret-1")
				awaitSettled(t, c, 3)
				settled = true
			}
			addr := ports.free("127.0.0.1:7070")
			if i := slices.Index(words, "--addr"); i >= 0 {
				addr = ports.free(words[i+1])
				words = slices.Delete(words, i, i+2)
			}
			run := newCLI(t, addr)
			run.env = append(append(run.env, exported...), env...)
			checkRecipeOutput(t, words[1:], run.ok(words[1:]...))
		}
	}
	c := login(t, nodes[0], "admin", "admin-secret-1")
	awaitSettled(t, c, 2) // node 3's replicas moved away
}

// checkRecipeOutput checks what the recipe's commands print.
func checkRecipeOutput(t *testing.T, args []string, out string) {
	t.Helper()
	want := map[string]string{"status": "3 of 3 nodes live, 64 shards, 64 led by their preferred leader", "list": `"hello, cluster"`,
		"shards": "\nsystem "}
	if w, ok := want[args[len(args)-1]]; ok && !strings.Contains(out, w) {
		t.Fatalf("boomtool %v printed:\n%s\nwant it to say %s", args, out, w)
	}
}

// freePorts maps the recipe's fixed addresses to free loopback ones.
type freePorts struct {
	t  *testing.T
	of map[string]string
}

func (p freePorts) free(fixed string) string {
	if a, ok := p.of[fixed]; ok {
		return a
	}
	p.of[fixed] = freeAddr(p.t)
	return p.of[fixed]
}
