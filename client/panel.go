package client

import (
	"context"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
)

// The operations behind the web panel: history, live views and bulk
// actions. The server keeps the history in memory; it starts empty at
// every server start.

// ListGroups lists groups, blocked ones first, with the dead letter holding each.
func (c *Client) ListGroups(ctx context.Context, in *boomerangv1.ListGroupsRequest) (*boomerangv1.ListGroupsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListGroups{ListGroups: in}})
	return empty(r, err, (*boomerangv1.Response).GetListGroups)
}

// GetStats returns the server's counters over time (admins and read-only clients).
func (c *Client) GetStats(ctx context.Context, in *boomerangv1.GetStatsRequest) (*boomerangv1.GetStatsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetStats{GetStats: in}})
	return empty(r, err, (*boomerangv1.Response).GetGetStats)
}

// GetDueHistogram counts upcoming runs per shard and time bucket (admins and read-only clients).
func (c *Client) GetDueHistogram(ctx context.Context, in *boomerangv1.GetDueHistogramRequest) (*boomerangv1.GetDueHistogramResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetDueHistogram{GetDueHistogram: in}})
	return need(r, err, (*boomerangv1.Response).GetGetDueHistogram)
}

// GetTaskAttempts returns the delivery attempts the server remembers of a task.
func (c *Client) GetTaskAttempts(ctx context.Context, in *boomerangv1.GetTaskAttemptsRequest) (*boomerangv1.GetTaskAttemptsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetTaskAttempts{GetTaskAttempts: in}})
	return empty(r, err, (*boomerangv1.Response).GetGetTaskAttempts)
}

// ListCompleted lists recently finished occurrences with their attempts, newest first.
func (c *Client) ListCompleted(ctx context.Context, in *boomerangv1.ListCompletedRequest) (*boomerangv1.ListCompletedResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListCompleted{ListCompleted: in}})
	return empty(r, err, (*boomerangv1.Response).GetListCompleted)
}

// ListAuditLog lists operator actions, newest first.
func (c *Client) ListAuditLog(ctx context.Context, in *boomerangv1.ListAuditLogRequest) (*boomerangv1.ListAuditLogResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListAuditLog{ListAuditLog: in}})
	return empty(r, err, (*boomerangv1.Response).GetListAuditLog)
}

// BulkDeadLetters replays or deletes the dead letters matching a filter, a batch per call;
// call again with AfterId set to LastId while More is set. With DryRun it only counts.
func (c *Client) BulkDeadLetters(ctx context.Context, in *boomerangv1.BulkDeadLettersRequest) (*boomerangv1.BulkDeadLettersResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_BulkDeadLetters{BulkDeadLetters: in}})
	return empty(r, err, (*boomerangv1.Response).GetBulkDeadLetters)
}

// GetCluster describes the nodes and shards (admins and read-only clients).
func (c *Client) GetCluster(ctx context.Context, in *boomerangv1.GetClusterRequest) (*boomerangv1.GetClusterResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_GetCluster{GetCluster: in}})
	return need(r, err, (*boomerangv1.Response).GetGetCluster)
}

// ListPools returns the dispatch pools and their saturation (admins and read-only clients).
func (c *Client) ListPools(ctx context.Context, in *boomerangv1.ListPoolsRequest) (*boomerangv1.ListPoolsResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ListPools{ListPools: in}})
	return empty(r, err, (*boomerangv1.Response).GetListPools)
}

// ChangeCluster drains, undrains or removes a cluster node, or moves a
// shard's replica or leadership (admins).
func (c *Client) ChangeCluster(ctx context.Context, in *boomerangv1.ChangeClusterRequest) (*boomerangv1.ChangeClusterResponse, error) {
	r, err := c.do(ctx, &boomerangv1.Request{Body: &boomerangv1.Request_ChangeCluster{ChangeCluster: in}})
	return need(r, err, (*boomerangv1.Response).GetChangeCluster)
}
