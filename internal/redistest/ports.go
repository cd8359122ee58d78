package redistest

import (
	"errors"
	"net"
	"strconv"
)

// clusterBusOffset is how far above its client port a cluster node listens for other nodes.
const clusterBusOffset = 10000

// reservedPorts are never handed to a server we start: the machine's own Redis lives there.
var reservedPorts = map[int]bool{6379: true, 6379 + clusterBusOffset: true}

// pickPorts returns n distinct loopback ports that were free a moment ago, and, with bus set,
// whose cluster bus ports (port+10000) were free too. The ports are held until all are chosen so
// they differ from each other. Another process can still take one before the server binds it;
// startProcess detects that and retries.
func pickPorts(n int, bus bool) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 20*n+20 {
			return nil, errors.New("redistest: no free loopback ports found")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if reservedPorts[port] {
			continue
		}
		if bus {
			if port+clusterBusOffset > 65535 || reservedPorts[port+clusterBusOffset] {
				continue
			}
			bl, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+clusterBusOffset))
			if err != nil {
				continue
			}
			held = append(held, bl)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
