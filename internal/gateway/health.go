package gateway

import (
	pb "github.com/soulstack/soulstack/proto/soulstack/v1"
)

// SendHealth queues a health assignment (JSON of health.Assignment) to a
// connected soul; false when it is not connected here.
func (g *Gateway) SendHealth(sid string, assignment []byte) bool {
	s := g.lookup(sid)
	if s == nil {
		return false
	}
	return s.enqueue(&pb.KeeperMessage{Msg: &pb.KeeperMessage_Health{Health: &pb.HealthAssignment{Assignment: assignment}}})
}
