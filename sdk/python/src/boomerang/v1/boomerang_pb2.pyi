from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BACKOFF_EXPONENTIAL: Backoff
BACKOFF_FIXED: Backoff
BACKOFF_UNSPECIFIED: Backoff
BULK_ACTION_DELETE: BulkAction
BULK_ACTION_REPLAY: BulkAction
BULK_ACTION_UNSPECIFIED: BulkAction
DESCRIPTOR: _descriptor.FileDescriptor
DISPATCH_MODE_BLOCK_ON_ERROR: DispatchMode
DISPATCH_MODE_IMMEDIATE: DispatchMode
DISPATCH_MODE_NEXT_ON_ERROR: DispatchMode
DISPATCH_MODE_UNSPECIFIED: DispatchMode
PROTOCOL_ACTIVEMQ: Protocol
PROTOCOL_AMQP: Protocol
PROTOCOL_GRPC: Protocol
PROTOCOL_HTTP: Protocol
PROTOCOL_NATS: Protocol
PROTOCOL_SQS: Protocol
PROTOCOL_TCP: Protocol
PROTOCOL_UDP: Protocol
PROTOCOL_UNSPECIFIED: Protocol
ROLE_ADMIN: Role
ROLE_CLIENT: Role
ROLE_READ_ONLY: Role
ROLE_UNSPECIFIED: Role
STATUS_BUSY: Status
STATUS_CONFLICT: Status
STATUS_GROUP_FULL: Status
STATUS_INTERNAL: Status
STATUS_INVALID_REQUEST: Status
STATUS_NOT_FOUND: Status
STATUS_NOT_LEADER: Status
STATUS_OK: Status
STATUS_SESSION_EXPIRED: Status
STATUS_UNAUTHORIZED: Status
STATUS_UNSPECIFIED: Status
TASK_ORDER_DUE: TaskOrder
TASK_ORDER_ID: TaskOrder
TASK_ORDER_UNSPECIFIED: TaskOrder
TASK_STATUS_BLOCKED: TaskStatus
TASK_STATUS_DELIVERING: TaskStatus
TASK_STATUS_FINISHED: TaskStatus
TASK_STATUS_QUEUED: TaskStatus
TASK_STATUS_RETRYING: TaskStatus
TASK_STATUS_SCHEDULED: TaskStatus
TASK_STATUS_UNSPECIFIED: TaskStatus

class Ack(_message.Message):
    __slots__ = ["delivery_id", "error", "ok"]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    delivery_id: int
    error: str
    ok: bool
    def __init__(self, delivery_id: _Optional[int] = ..., ok: bool = ..., error: _Optional[str] = ...) -> None: ...

class Attempt(_message.Message):
    __slots__ = ["attempt", "duration_ms", "error", "fire_at_ms", "ok", "protocol", "running", "started_ms"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    duration_ms: float
    error: str
    fire_at_ms: int
    ok: bool
    protocol: Protocol
    running: bool
    started_ms: int
    def __init__(self, attempt: _Optional[int] = ..., fire_at_ms: _Optional[int] = ..., started_ms: _Optional[int] = ..., duration_ms: _Optional[float] = ..., ok: bool = ..., error: _Optional[str] = ..., protocol: _Optional[_Union[Protocol, str]] = ..., running: bool = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ["action", "actor", "at_ms", "client", "detail", "id", "status", "target"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: str
    at_ms: int
    client: str
    detail: str
    id: int
    status: Status
    target: str
    def __init__(self, id: _Optional[int] = ..., at_ms: _Optional[int] = ..., actor: _Optional[str] = ..., action: _Optional[str] = ..., client: _Optional[str] = ..., target: _Optional[str] = ..., detail: _Optional[str] = ..., status: _Optional[_Union[Status, str]] = ...) -> None: ...

class BulkDeadLettersRequest(_message.Message):
    __slots__ = ["action", "after_id", "client", "dry_run", "error_contains", "failed_before_ms", "group", "limit", "payload_contains"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    AFTER_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    ERROR_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    FAILED_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    action: BulkAction
    after_id: int
    client: str
    dry_run: bool
    error_contains: str
    failed_before_ms: int
    group: str
    limit: int
    payload_contains: bytes
    def __init__(self, action: _Optional[_Union[BulkAction, str]] = ..., client: _Optional[str] = ..., group: _Optional[str] = ..., failed_before_ms: _Optional[int] = ..., error_contains: _Optional[str] = ..., payload_contains: _Optional[bytes] = ..., dry_run: bool = ..., after_id: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class BulkDeadLettersResponse(_message.Message):
    __slots__ = ["done", "last_error", "last_id", "matched", "more", "skipped"]
    DONE_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ID_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    done: int
    last_error: str
    last_id: int
    matched: int
    more: bool
    skipped: int
    def __init__(self, matched: _Optional[int] = ..., done: _Optional[int] = ..., skipped: _Optional[int] = ..., last_id: _Optional[int] = ..., more: bool = ..., last_error: _Optional[str] = ...) -> None: ...

class Callback(_message.Message):
    __slots__ = ["endpoint", "pool", "protocol", "timeout_ms"]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    endpoint: str
    pool: str
    protocol: Protocol
    timeout_ms: int
    def __init__(self, protocol: _Optional[_Union[Protocol, str]] = ..., endpoint: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., pool: _Optional[str] = ...) -> None: ...

class CallbackRules(_message.Message):
    __slots__ = ["allow", "deny"]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    DENY_FIELD_NUMBER: _ClassVar[int]
    allow: _containers.RepeatedScalarFieldContainer[str]
    deny: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allow: _Optional[_Iterable[str]] = ..., deny: _Optional[_Iterable[str]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class CancelTaskResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CancelTasksRequest(_message.Message):
    __slots__ = ["client", "dry_run", "group"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    client: str
    dry_run: bool
    group: str
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ..., dry_run: bool = ...) -> None: ...

class CancelTasksResponse(_message.Message):
    __slots__ = ["cancelled", "matched", "skipped"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    matched: int
    skipped: int
    def __init__(self, matched: _Optional[int] = ..., cancelled: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class ChangeClusterRequest(_message.Message):
    __slots__ = ["drain", "move", "remove", "undrain"]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    MOVE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    UNDRAIN_FIELD_NUMBER: _ClassVar[int]
    drain: str
    move: ShardMove
    remove: str
    undrain: str
    def __init__(self, drain: _Optional[str] = ..., undrain: _Optional[str] = ..., remove: _Optional[str] = ..., move: _Optional[_Union[ShardMove, _Mapping]] = ...) -> None: ...

class ChangeClusterResponse(_message.Message):
    __slots__ = ["map_revision"]
    MAP_REVISION_FIELD_NUMBER: _ClassVar[int]
    map_revision: int
    def __init__(self, map_revision: _Optional[int] = ...) -> None: ...

class ChangePasswordRequest(_message.Message):
    __slots__ = ["client_id", "current_password", "new_password"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    NEW_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    current_password: str
    new_password: str
    def __init__(self, client_id: _Optional[str] = ..., current_password: _Optional[str] = ..., new_password: _Optional[str] = ...) -> None: ...

class ChangePasswordResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ClientConfig(_message.Message):
    __slots__ = ["admin", "callback", "callback_rules", "created_ms", "dead_letters", "default_mode", "group_limit", "group_rate_limit", "group_rate_limits", "id", "previous_secret_expires_ms", "retry", "role"]
    class GroupRateLimitsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: RateLimit
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_RULES_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    GROUP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_SECRET_EXPIRES_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    admin: bool
    callback: Callback
    callback_rules: CallbackRules
    created_ms: int
    dead_letters: DeadLetterPolicy
    default_mode: DispatchMode
    group_limit: int
    group_rate_limit: RateLimit
    group_rate_limits: _containers.MessageMap[str, RateLimit]
    id: str
    previous_secret_expires_ms: int
    retry: RetryPolicy
    role: Role
    def __init__(self, id: _Optional[str] = ..., admin: bool = ..., callback: _Optional[_Union[Callback, _Mapping]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., dead_letters: _Optional[_Union[DeadLetterPolicy, _Mapping]] = ..., default_mode: _Optional[_Union[DispatchMode, str]] = ..., created_ms: _Optional[int] = ..., group_limit: _Optional[int] = ..., role: _Optional[_Union[Role, str]] = ..., callback_rules: _Optional[_Union[CallbackRules, _Mapping]] = ..., previous_secret_expires_ms: _Optional[int] = ..., group_rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ..., group_rate_limits: _Optional[_Mapping[str, RateLimit]] = ...) -> None: ...

class ClusterNode(_message.Message):
    __slots__ = ["health", "healthy", "http_address", "id", "live", "mark", "raft_address", "started_ms", "tcp_address", "version", "zone"]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    MARK_FIELD_NUMBER: _ClassVar[int]
    RAFT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    TCP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    health: str
    healthy: bool
    http_address: str
    id: str
    live: bool
    mark: str
    raft_address: str
    started_ms: int
    tcp_address: str
    version: str
    zone: str
    def __init__(self, id: _Optional[str] = ..., tcp_address: _Optional[str] = ..., http_address: _Optional[str] = ..., healthy: bool = ..., health: _Optional[str] = ..., started_ms: _Optional[int] = ..., version: _Optional[str] = ..., raft_address: _Optional[str] = ..., zone: _Optional[str] = ..., mark: _Optional[str] = ..., live: bool = ...) -> None: ...

class ClusterShard(_message.Message):
    __slots__ = ["leader", "learners", "partition", "preferred_leader", "replicas", "shard"]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEARNERS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_LEADER_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    leader: str
    learners: _containers.RepeatedScalarFieldContainer[str]
    partition: int
    preferred_leader: str
    replicas: _containers.RepeatedScalarFieldContainer[str]
    shard: int
    def __init__(self, shard: _Optional[int] = ..., leader: _Optional[str] = ..., replicas: _Optional[_Iterable[str]] = ..., partition: _Optional[int] = ..., preferred_leader: _Optional[str] = ..., learners: _Optional[_Iterable[str]] = ...) -> None: ...

class CompletedTask(_message.Message):
    __slots__ = ["attempts", "dead_letter_id", "delivered", "error", "finished_ms", "seq", "task"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FINISHED_MS_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    dead_letter_id: int
    delivered: bool
    error: str
    finished_ms: int
    seq: int
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., delivered: bool = ..., dead_letter_id: _Optional[int] = ..., error: _Optional[str] = ..., finished_ms: _Optional[int] = ..., attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ..., seq: _Optional[int] = ...) -> None: ...

class DeadLetter(_message.Message):
    __slots__ = ["attempts", "blocks_group", "failed_ms", "id", "last_error", "task"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_GROUP_FIELD_NUMBER: _ClassVar[int]
    FAILED_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    blocks_group: bool
    failed_ms: int
    id: int
    last_error: str
    task: Task
    def __init__(self, id: _Optional[int] = ..., task: _Optional[_Union[Task, _Mapping]] = ..., last_error: _Optional[str] = ..., attempts: _Optional[int] = ..., failed_ms: _Optional[int] = ..., blocks_group: bool = ...) -> None: ...

class DeadLetterPolicy(_message.Message):
    __slots__ = ["max_entries", "retention_ms"]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    max_entries: int
    retention_ms: int
    def __init__(self, max_entries: _Optional[int] = ..., retention_ms: _Optional[int] = ...) -> None: ...

class DeleteDeadLetterRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class DeleteDeadLetterResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Delivery(_message.Message):
    __slots__ = ["attempt", "client", "delivery_id", "fire_at_ms", "group", "payload", "sent_ms", "task_id", "term"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ID_FIELD_NUMBER: _ClassVar[int]
    FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SENT_MS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    client: str
    delivery_id: int
    fire_at_ms: int
    group: str
    payload: bytes
    sent_ms: int
    task_id: int
    term: int
    def __init__(self, delivery_id: _Optional[int] = ..., task_id: _Optional[int] = ..., attempt: _Optional[int] = ..., client: _Optional[str] = ..., group: _Optional[str] = ..., fire_at_ms: _Optional[int] = ..., payload: _Optional[bytes] = ..., sent_ms: _Optional[int] = ..., term: _Optional[int] = ...) -> None: ...

class DeregisterClientRequest(_message.Message):
    __slots__ = ["client_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    def __init__(self, client_id: _Optional[str] = ...) -> None: ...

class DeregisterClientResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Error(_message.Message):
    __slots__ = ["field", "message", "not_leader", "status"]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NOT_LEADER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    field: str
    message: str
    not_leader: NotLeader
    status: Status
    def __init__(self, status: _Optional[_Union[Status, str]] = ..., message: _Optional[str] = ..., field: _Optional[str] = ..., not_leader: _Optional[_Union[NotLeader, _Mapping]] = ...) -> None: ...

class GetClientRequest(_message.Message):
    __slots__ = ["client_id"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    def __init__(self, client_id: _Optional[str] = ...) -> None: ...

class GetClientResponse(_message.Message):
    __slots__ = ["client"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    client: ClientConfig
    def __init__(self, client: _Optional[_Union[ClientConfig, _Mapping]] = ...) -> None: ...

class GetClusterRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetClusterResponse(_message.Message):
    __slots__ = ["map_revision", "name", "nodes", "shards", "standalone", "system"]
    MAP_REVISION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    STANDALONE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    map_revision: int
    name: str
    nodes: _containers.RepeatedCompositeFieldContainer[ClusterNode]
    shards: _containers.RepeatedCompositeFieldContainer[ClusterShard]
    standalone: bool
    system: ClusterShard
    def __init__(self, standalone: bool = ..., nodes: _Optional[_Iterable[_Union[ClusterNode, _Mapping]]] = ..., shards: _Optional[_Iterable[_Union[ClusterShard, _Mapping]]] = ..., name: _Optional[str] = ..., map_revision: _Optional[int] = ..., system: _Optional[_Union[ClusterShard, _Mapping]] = ...) -> None: ...

class GetDeadLetterRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetDeadLetterResponse(_message.Message):
    __slots__ = ["dead_letter"]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    dead_letter: DeadLetter
    def __init__(self, dead_letter: _Optional[_Union[DeadLetter, _Mapping]] = ...) -> None: ...

class GetDueHistogramRequest(_message.Message):
    __slots__ = ["bucket_ms", "buckets", "from_ms"]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_MS_FIELD_NUMBER: _ClassVar[int]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    bucket_ms: int
    buckets: int
    from_ms: int
    def __init__(self, from_ms: _Optional[int] = ..., bucket_ms: _Optional[int] = ..., buckets: _Optional[int] = ...) -> None: ...

class GetDueHistogramResponse(_message.Message):
    __slots__ = ["bucket_ms", "buckets", "counts", "from_ms", "overdue", "shards", "truncated"]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BUCKET_MS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    FROM_MS_FIELD_NUMBER: _ClassVar[int]
    OVERDUE_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    bucket_ms: int
    buckets: int
    counts: _containers.RepeatedScalarFieldContainer[int]
    from_ms: int
    overdue: int
    shards: int
    truncated: bool
    def __init__(self, from_ms: _Optional[int] = ..., bucket_ms: _Optional[int] = ..., buckets: _Optional[int] = ..., shards: _Optional[int] = ..., counts: _Optional[_Iterable[int]] = ..., overdue: _Optional[int] = ..., truncated: bool = ...) -> None: ...

class GetGroupRequest(_message.Message):
    __slots__ = ["client", "group"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    client: str
    group: str
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class GetGroupResponse(_message.Message):
    __slots__ = ["group"]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ...) -> None: ...

class GetRoutesRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetRoutesResponse(_message.Message):
    __slots__ = ["client", "leaders", "node", "nodes", "revision", "shards", "standalone"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    LEADERS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    STANDALONE_FIELD_NUMBER: _ClassVar[int]
    client: str
    leaders: _containers.RepeatedScalarFieldContainer[str]
    node: str
    nodes: _containers.RepeatedCompositeFieldContainer[RouteNode]
    revision: int
    shards: int
    standalone: bool
    def __init__(self, standalone: bool = ..., shards: _Optional[int] = ..., revision: _Optional[int] = ..., nodes: _Optional[_Iterable[_Union[RouteNode, _Mapping]]] = ..., leaders: _Optional[_Iterable[str]] = ..., node: _Optional[str] = ..., client: _Optional[str] = ...) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ["completed_window_ms", "http_address", "max_frame_bytes", "max_payload_bytes", "min_refresh_ms", "partitions", "payload_search_bytes", "started_ms", "tcp_address", "ui_path", "version"]
    COMPLETED_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    MAX_FRAME_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIN_REFRESH_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SEARCH_BYTES_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    TCP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    UI_PATH_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    completed_window_ms: int
    http_address: str
    max_frame_bytes: int
    max_payload_bytes: int
    min_refresh_ms: int
    partitions: int
    payload_search_bytes: int
    started_ms: int
    tcp_address: str
    ui_path: str
    version: str
    def __init__(self, version: _Optional[str] = ..., started_ms: _Optional[int] = ..., partitions: _Optional[int] = ..., tcp_address: _Optional[str] = ..., http_address: _Optional[str] = ..., max_payload_bytes: _Optional[int] = ..., max_frame_bytes: _Optional[int] = ..., min_refresh_ms: _Optional[int] = ..., completed_window_ms: _Optional[int] = ..., payload_search_bytes: _Optional[int] = ..., ui_path: _Optional[str] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = ["since_ms"]
    SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    since_ms: int
    def __init__(self, since_ms: _Optional[int] = ...) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ["interval_ms", "samples"]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    interval_ms: int
    samples: _containers.RepeatedCompositeFieldContainer[StatsSample]
    def __init__(self, samples: _Optional[_Iterable[_Union[StatsSample, _Mapping]]] = ..., interval_ms: _Optional[int] = ...) -> None: ...

class GetTaskAttemptsRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetTaskAttemptsResponse(_message.Message):
    __slots__ = ["attempts"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    attempts: _containers.RepeatedCompositeFieldContainer[Attempt]
    def __init__(self, attempts: _Optional[_Iterable[_Union[Attempt, _Mapping]]] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ["blocked", "blocked_dead_letter_id", "blocked_since_ms", "client", "group", "rate_limit", "tasks"]
    BLOCKED_DEAD_LETTER_ID_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    blocked: bool
    blocked_dead_letter_id: int
    blocked_since_ms: int
    client: str
    group: str
    rate_limit: RateLimit
    tasks: int
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ..., tasks: _Optional[int] = ..., blocked: bool = ..., blocked_dead_letter_id: _Optional[int] = ..., blocked_since_ms: _Optional[int] = ..., rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...

class GroupSummary(_message.Message):
    __slots__ = ["blocking", "group"]
    BLOCKING_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    blocking: DeadLetter
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ..., blocking: _Optional[_Union[DeadLetter, _Mapping]] = ...) -> None: ...

class ListAuditLogRequest(_message.Message):
    __slots__ = ["before_id", "limit"]
    BEFORE_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    before_id: int
    limit: int
    def __init__(self, limit: _Optional[int] = ..., before_id: _Optional[int] = ...) -> None: ...

class ListAuditLogResponse(_message.Message):
    __slots__ = ["entries"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ...) -> None: ...

class ListClientsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListClientsResponse(_message.Message):
    __slots__ = ["clients"]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    clients: _containers.RepeatedCompositeFieldContainer[ClientConfig]
    def __init__(self, clients: _Optional[_Iterable[_Union[ClientConfig, _Mapping]]] = ...) -> None: ...

class ListCompletedRequest(_message.Message):
    __slots__ = ["client", "failed_only", "group", "page_size", "page_token", "task_id"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    FAILED_ONLY_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    client: str
    failed_only: bool
    group: str
    page_size: int
    page_token: int
    task_id: int
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ..., task_id: _Optional[int] = ..., failed_only: bool = ..., page_token: _Optional[int] = ..., page_size: _Optional[int] = ...) -> None: ...

class ListCompletedResponse(_message.Message):
    __slots__ = ["next_page_token", "tasks"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: int
    tasks: _containers.RepeatedCompositeFieldContainer[CompletedTask]
    def __init__(self, tasks: _Optional[_Iterable[_Union[CompletedTask, _Mapping]]] = ..., next_page_token: _Optional[int] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ["client", "error_contains", "failed_before_ms", "group", "page_size", "page_token", "payload_contains"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    FAILED_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    client: str
    error_contains: str
    failed_before_ms: int
    group: str
    page_size: int
    page_token: int
    payload_contains: bytes
    def __init__(self, client: _Optional[str] = ..., page_token: _Optional[int] = ..., page_size: _Optional[int] = ..., group: _Optional[str] = ..., failed_before_ms: _Optional[int] = ..., error_contains: _Optional[str] = ..., payload_contains: _Optional[bytes] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ["dead_letters", "next_page_token"]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    dead_letters: _containers.RepeatedCompositeFieldContainer[DeadLetter]
    next_page_token: int
    def __init__(self, dead_letters: _Optional[_Iterable[_Union[DeadLetter, _Mapping]]] = ..., next_page_token: _Optional[int] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ["blocked_only", "client", "group_contains", "limit"]
    BLOCKED_ONLY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    blocked_only: bool
    client: str
    group_contains: str
    limit: int
    def __init__(self, client: _Optional[str] = ..., blocked_only: bool = ..., group_contains: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ["groups", "truncated"]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupSummary]
    truncated: bool
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupSummary, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class ListPoolsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListPoolsResponse(_message.Message):
    __slots__ = ["pools"]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[PoolInfo]
    def __init__(self, pools: _Optional[_Iterable[_Union[PoolInfo, _Mapping]]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["client"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    client: str
    def __init__(self, client: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["sessions"]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ["client", "due_from_ms", "due_to_ms", "group", "order", "page_due_ms", "page_size", "page_token", "payload_contains", "recurring", "shard", "status"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DUE_FROM_MS_FIELD_NUMBER: _ClassVar[int]
    DUE_TO_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    PAGE_DUE_MS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    RECURRING_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    client: str
    due_from_ms: int
    due_to_ms: int
    group: str
    order: TaskOrder
    page_due_ms: int
    page_size: int
    page_token: int
    payload_contains: bytes
    recurring: bool
    shard: int
    status: TaskStatus
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ..., due_from_ms: _Optional[int] = ..., due_to_ms: _Optional[int] = ..., recurring: bool = ..., status: _Optional[_Union[TaskStatus, str]] = ..., page_token: _Optional[int] = ..., page_size: _Optional[int] = ..., payload_contains: _Optional[bytes] = ..., shard: _Optional[int] = ..., order: _Optional[_Union[TaskOrder, str]] = ..., page_due_ms: _Optional[int] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ["next_page_due_ms", "next_page_token", "tasks"]
    NEXT_PAGE_DUE_MS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    next_page_due_ms: int
    next_page_token: int
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., next_page_token: _Optional[int] = ..., next_page_due_ms: _Optional[int] = ...) -> None: ...

class LoginRequest(_message.Message):
    __slots__ = ["client_id", "password"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    password: str
    def __init__(self, client_id: _Optional[str] = ..., password: _Optional[str] = ...) -> None: ...

class LoginResponse(_message.Message):
    __slots__ = ["admin", "expires_at_ms", "role", "session_id"]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    admin: bool
    expires_at_ms: int
    role: Role
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., expires_at_ms: _Optional[int] = ..., admin: bool = ..., role: _Optional[_Union[Role, str]] = ...) -> None: ...

class LogoutRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class LogoutResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class NotLeader(_message.Message):
    __slots__ = ["leader_id", "leader_tcp_address", "revision", "shard"]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_TCP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    leader_id: str
    leader_tcp_address: str
    revision: int
    shard: int
    def __init__(self, shard: _Optional[int] = ..., leader_id: _Optional[str] = ..., leader_tcp_address: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class Percentiles(_message.Message):
    __slots__ = ["count", "max_ms", "p50_ms", "p90_ms", "p99_ms"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_MS_FIELD_NUMBER: _ClassVar[int]
    P50_MS_FIELD_NUMBER: _ClassVar[int]
    P90_MS_FIELD_NUMBER: _ClassVar[int]
    P99_MS_FIELD_NUMBER: _ClassVar[int]
    count: int
    max_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    def __init__(self, count: _Optional[int] = ..., p50_ms: _Optional[float] = ..., p90_ms: _Optional[float] = ..., p99_ms: _Optional[float] = ..., max_ms: _Optional[float] = ...) -> None: ...

class PoolInfo(_message.Message):
    __slots__ = ["in_use", "max_concurrent", "max_per_second", "name", "queued", "rejected"]
    IN_USE_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    MAX_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    in_use: int
    max_concurrent: int
    max_per_second: float
    name: str
    queued: int
    rejected: int
    def __init__(self, name: _Optional[str] = ..., max_concurrent: _Optional[int] = ..., in_use: _Optional[int] = ..., queued: _Optional[int] = ..., max_per_second: _Optional[float] = ..., rejected: _Optional[int] = ...) -> None: ...

class ProtocolCount(_message.Message):
    __slots__ = ["delivered", "failed", "protocol"]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    delivered: int
    failed: int
    protocol: Protocol
    def __init__(self, protocol: _Optional[_Union[Protocol, str]] = ..., delivered: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class PurgeDeadLettersRequest(_message.Message):
    __slots__ = ["client", "dry_run", "error_contains", "failed_before_ms", "group"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    ERROR_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    FAILED_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    client: str
    dry_run: bool
    error_contains: str
    failed_before_ms: int
    group: str
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ..., failed_before_ms: _Optional[int] = ..., error_contains: _Optional[str] = ..., dry_run: bool = ...) -> None: ...

class PurgeDeadLettersResponse(_message.Message):
    __slots__ = ["deleted", "matched", "skipped"]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    matched: int
    skipped: int
    def __init__(self, matched: _Optional[int] = ..., deleted: _Optional[int] = ..., skipped: _Optional[int] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ["interval_ms", "max_deliveries"]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    interval_ms: int
    max_deliveries: int
    def __init__(self, max_deliveries: _Optional[int] = ..., interval_ms: _Optional[int] = ...) -> None: ...

class RefreshSessionRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RefreshSessionResponse(_message.Message):
    __slots__ = ["expires_at_ms", "session_id"]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    expires_at_ms: int
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., expires_at_ms: _Optional[int] = ...) -> None: ...

class RegisterClientRequest(_message.Message):
    __slots__ = ["admin", "callback", "callback_rules", "client_id", "dead_letters", "default_mode", "group_limit", "group_rate_limit", "group_rate_limits", "password", "retry", "role", "signing_secret"]
    class GroupRateLimitsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: RateLimit
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_RULES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    GROUP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    admin: bool
    callback: Callback
    callback_rules: CallbackRules
    client_id: str
    dead_letters: DeadLetterPolicy
    default_mode: DispatchMode
    group_limit: int
    group_rate_limit: RateLimit
    group_rate_limits: _containers.MessageMap[str, RateLimit]
    password: str
    retry: RetryPolicy
    role: Role
    signing_secret: bytes
    def __init__(self, client_id: _Optional[str] = ..., password: _Optional[str] = ..., admin: bool = ..., callback: _Optional[_Union[Callback, _Mapping]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., dead_letters: _Optional[_Union[DeadLetterPolicy, _Mapping]] = ..., default_mode: _Optional[_Union[DispatchMode, str]] = ..., signing_secret: _Optional[bytes] = ..., group_limit: _Optional[int] = ..., role: _Optional[_Union[Role, str]] = ..., callback_rules: _Optional[_Union[CallbackRules, _Mapping]] = ..., group_rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ..., group_rate_limits: _Optional[_Mapping[str, RateLimit]] = ...) -> None: ...

class RegisterClientResponse(_message.Message):
    __slots__ = ["client", "signing_secret"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    client: ClientConfig
    signing_secret: bytes
    def __init__(self, client: _Optional[_Union[ClientConfig, _Mapping]] = ..., signing_secret: _Optional[bytes] = ...) -> None: ...

class RegisterTaskRequest(_message.Message):
    __slots__ = ["callback", "cron", "debounce_ms", "delay_ms", "fire_at_ms", "group", "idempotency_key", "max_wait_ms", "mode", "payload", "repeat_interval_ms", "replace_key", "retry", "time_zone"]
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_MS_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REPEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_KEY_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    callback: Callback
    cron: str
    debounce_ms: int
    delay_ms: int
    fire_at_ms: int
    group: str
    idempotency_key: str
    max_wait_ms: int
    mode: DispatchMode
    payload: bytes
    repeat_interval_ms: int
    replace_key: str
    retry: RetryPolicy
    time_zone: str
    def __init__(self, payload: _Optional[bytes] = ..., delay_ms: _Optional[int] = ..., fire_at_ms: _Optional[int] = ..., repeat_interval_ms: _Optional[int] = ..., group: _Optional[str] = ..., mode: _Optional[_Union[DispatchMode, str]] = ..., callback: _Optional[_Union[Callback, _Mapping]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., replace_key: _Optional[str] = ..., debounce_ms: _Optional[int] = ..., max_wait_ms: _Optional[int] = ...) -> None: ...

class RegisterTaskResponse(_message.Message):
    __slots__ = ["created", "replaced", "task"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    created: bool
    replaced: bool
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., created: bool = ..., replaced: bool = ...) -> None: ...

class RegisterTaskResult(_message.Message):
    __slots__ = ["error", "registered"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    error: Error
    registered: RegisterTaskResponse
    def __init__(self, registered: _Optional[_Union[RegisterTaskResponse, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class RegisterTasksRequest(_message.Message):
    __slots__ = ["client", "tasks"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    client: str
    tasks: _containers.RepeatedCompositeFieldContainer[RegisterTaskRequest]
    def __init__(self, tasks: _Optional[_Iterable[_Union[RegisterTaskRequest, _Mapping]]] = ..., client: _Optional[str] = ...) -> None: ...

class RegisterTasksResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[RegisterTaskResult]
    def __init__(self, results: _Optional[_Iterable[_Union[RegisterTaskResult, _Mapping]]] = ...) -> None: ...

class ReplayDeadLetterRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class ReplayDeadLetterResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ["bulk_dead_letters", "cancel_task", "cancel_tasks", "change_cluster", "change_password", "delete_dead_letter", "deregister_client", "get_client", "get_cluster", "get_dead_letter", "get_due_histogram", "get_group", "get_routes", "get_server_info", "get_stats", "get_task", "get_task_attempts", "list_audit_log", "list_clients", "list_completed", "list_dead_letters", "list_groups", "list_pools", "list_sessions", "list_tasks", "login", "logout", "purge_dead_letters", "refresh_session", "register_client", "register_task", "register_tasks", "replay_dead_letter", "request_id", "revoke_sessions", "rotate_signing_secret", "route", "session_id", "skip_group", "unblock_group", "update_client", "update_task"]
    BULK_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TASKS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TASK_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    CHANGE_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    DELETE_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    DEREGISTER_CLIENT_FIELD_NUMBER: _ClassVar[int]
    GET_CLIENT_FIELD_NUMBER: _ClassVar[int]
    GET_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    GET_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    GET_DUE_HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    GET_GROUP_FIELD_NUMBER: _ClassVar[int]
    GET_ROUTES_FIELD_NUMBER: _ClassVar[int]
    GET_SERVER_INFO_FIELD_NUMBER: _ClassVar[int]
    GET_STATS_FIELD_NUMBER: _ClassVar[int]
    GET_TASK_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    GET_TASK_FIELD_NUMBER: _ClassVar[int]
    LIST_AUDIT_LOG_FIELD_NUMBER: _ClassVar[int]
    LIST_CLIENTS_FIELD_NUMBER: _ClassVar[int]
    LIST_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    LIST_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    LIST_GROUPS_FIELD_NUMBER: _ClassVar[int]
    LIST_POOLS_FIELD_NUMBER: _ClassVar[int]
    LIST_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    LIST_TASKS_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    LOGOUT_FIELD_NUMBER: _ClassVar[int]
    PURGE_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    REFRESH_SESSION_FIELD_NUMBER: _ClassVar[int]
    REGISTER_CLIENT_FIELD_NUMBER: _ClassVar[int]
    REGISTER_TASKS_FIELD_NUMBER: _ClassVar[int]
    REGISTER_TASK_FIELD_NUMBER: _ClassVar[int]
    REPLAY_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REVOKE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ROTATE_SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SKIP_GROUP_FIELD_NUMBER: _ClassVar[int]
    UNBLOCK_GROUP_FIELD_NUMBER: _ClassVar[int]
    UPDATE_CLIENT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TASK_FIELD_NUMBER: _ClassVar[int]
    bulk_dead_letters: BulkDeadLettersRequest
    cancel_task: CancelTaskRequest
    cancel_tasks: CancelTasksRequest
    change_cluster: ChangeClusterRequest
    change_password: ChangePasswordRequest
    delete_dead_letter: DeleteDeadLetterRequest
    deregister_client: DeregisterClientRequest
    get_client: GetClientRequest
    get_cluster: GetClusterRequest
    get_dead_letter: GetDeadLetterRequest
    get_due_histogram: GetDueHistogramRequest
    get_group: GetGroupRequest
    get_routes: GetRoutesRequest
    get_server_info: GetServerInfoRequest
    get_stats: GetStatsRequest
    get_task: GetTaskRequest
    get_task_attempts: GetTaskAttemptsRequest
    list_audit_log: ListAuditLogRequest
    list_clients: ListClientsRequest
    list_completed: ListCompletedRequest
    list_dead_letters: ListDeadLettersRequest
    list_groups: ListGroupsRequest
    list_pools: ListPoolsRequest
    list_sessions: ListSessionsRequest
    list_tasks: ListTasksRequest
    login: LoginRequest
    logout: LogoutRequest
    purge_dead_letters: PurgeDeadLettersRequest
    refresh_session: RefreshSessionRequest
    register_client: RegisterClientRequest
    register_task: RegisterTaskRequest
    register_tasks: RegisterTasksRequest
    replay_dead_letter: ReplayDeadLetterRequest
    request_id: int
    revoke_sessions: RevokeSessionsRequest
    rotate_signing_secret: RotateSigningSecretRequest
    route: bool
    session_id: str
    skip_group: SkipGroupRequest
    unblock_group: UnblockGroupRequest
    update_client: UpdateClientRequest
    update_task: UpdateTaskRequest
    def __init__(self, request_id: _Optional[int] = ..., session_id: _Optional[str] = ..., route: bool = ..., login: _Optional[_Union[LoginRequest, _Mapping]] = ..., refresh_session: _Optional[_Union[RefreshSessionRequest, _Mapping]] = ..., register_client: _Optional[_Union[RegisterClientRequest, _Mapping]] = ..., deregister_client: _Optional[_Union[DeregisterClientRequest, _Mapping]] = ..., list_clients: _Optional[_Union[ListClientsRequest, _Mapping]] = ..., register_task: _Optional[_Union[RegisterTaskRequest, _Mapping]] = ..., update_task: _Optional[_Union[UpdateTaskRequest, _Mapping]] = ..., cancel_task: _Optional[_Union[CancelTaskRequest, _Mapping]] = ..., get_task: _Optional[_Union[GetTaskRequest, _Mapping]] = ..., list_tasks: _Optional[_Union[ListTasksRequest, _Mapping]] = ..., list_dead_letters: _Optional[_Union[ListDeadLettersRequest, _Mapping]] = ..., get_dead_letter: _Optional[_Union[GetDeadLetterRequest, _Mapping]] = ..., replay_dead_letter: _Optional[_Union[ReplayDeadLetterRequest, _Mapping]] = ..., delete_dead_letter: _Optional[_Union[DeleteDeadLetterRequest, _Mapping]] = ..., get_group: _Optional[_Union[GetGroupRequest, _Mapping]] = ..., unblock_group: _Optional[_Union[UnblockGroupRequest, _Mapping]] = ..., skip_group: _Optional[_Union[SkipGroupRequest, _Mapping]] = ..., get_server_info: _Optional[_Union[GetServerInfoRequest, _Mapping]] = ..., cancel_tasks: _Optional[_Union[CancelTasksRequest, _Mapping]] = ..., purge_dead_letters: _Optional[_Union[PurgeDeadLettersRequest, _Mapping]] = ..., logout: _Optional[_Union[LogoutRequest, _Mapping]] = ..., list_sessions: _Optional[_Union[ListSessionsRequest, _Mapping]] = ..., revoke_sessions: _Optional[_Union[RevokeSessionsRequest, _Mapping]] = ..., get_client: _Optional[_Union[GetClientRequest, _Mapping]] = ..., update_client: _Optional[_Union[UpdateClientRequest, _Mapping]] = ..., change_password: _Optional[_Union[ChangePasswordRequest, _Mapping]] = ..., rotate_signing_secret: _Optional[_Union[RotateSigningSecretRequest, _Mapping]] = ..., list_groups: _Optional[_Union[ListGroupsRequest, _Mapping]] = ..., get_stats: _Optional[_Union[GetStatsRequest, _Mapping]] = ..., get_due_histogram: _Optional[_Union[GetDueHistogramRequest, _Mapping]] = ..., get_task_attempts: _Optional[_Union[GetTaskAttemptsRequest, _Mapping]] = ..., list_completed: _Optional[_Union[ListCompletedRequest, _Mapping]] = ..., list_audit_log: _Optional[_Union[ListAuditLogRequest, _Mapping]] = ..., bulk_dead_letters: _Optional[_Union[BulkDeadLettersRequest, _Mapping]] = ..., get_cluster: _Optional[_Union[GetClusterRequest, _Mapping]] = ..., list_pools: _Optional[_Union[ListPoolsRequest, _Mapping]] = ..., register_tasks: _Optional[_Union[RegisterTasksRequest, _Mapping]] = ..., change_cluster: _Optional[_Union[ChangeClusterRequest, _Mapping]] = ..., get_routes: _Optional[_Union[GetRoutesRequest, _Mapping]] = ...) -> None: ...

class Response(_message.Message):
    __slots__ = ["bulk_dead_letters", "cancel_task", "cancel_tasks", "change_cluster", "change_password", "delete_dead_letter", "deregister_client", "error", "get_client", "get_cluster", "get_dead_letter", "get_due_histogram", "get_group", "get_routes", "get_server_info", "get_stats", "get_task", "get_task_attempts", "list_audit_log", "list_clients", "list_completed", "list_dead_letters", "list_groups", "list_pools", "list_sessions", "list_tasks", "login", "logout", "purge_dead_letters", "refresh_session", "register_client", "register_task", "register_tasks", "replay_dead_letter", "request_id", "revoke_sessions", "rotate_signing_secret", "skip_group", "unblock_group", "update_client", "update_task"]
    BULK_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TASKS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_TASK_FIELD_NUMBER: _ClassVar[int]
    CHANGE_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    CHANGE_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    DELETE_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    DEREGISTER_CLIENT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    GET_CLIENT_FIELD_NUMBER: _ClassVar[int]
    GET_CLUSTER_FIELD_NUMBER: _ClassVar[int]
    GET_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    GET_DUE_HISTOGRAM_FIELD_NUMBER: _ClassVar[int]
    GET_GROUP_FIELD_NUMBER: _ClassVar[int]
    GET_ROUTES_FIELD_NUMBER: _ClassVar[int]
    GET_SERVER_INFO_FIELD_NUMBER: _ClassVar[int]
    GET_STATS_FIELD_NUMBER: _ClassVar[int]
    GET_TASK_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    GET_TASK_FIELD_NUMBER: _ClassVar[int]
    LIST_AUDIT_LOG_FIELD_NUMBER: _ClassVar[int]
    LIST_CLIENTS_FIELD_NUMBER: _ClassVar[int]
    LIST_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    LIST_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    LIST_GROUPS_FIELD_NUMBER: _ClassVar[int]
    LIST_POOLS_FIELD_NUMBER: _ClassVar[int]
    LIST_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    LIST_TASKS_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    LOGOUT_FIELD_NUMBER: _ClassVar[int]
    PURGE_DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    REFRESH_SESSION_FIELD_NUMBER: _ClassVar[int]
    REGISTER_CLIENT_FIELD_NUMBER: _ClassVar[int]
    REGISTER_TASKS_FIELD_NUMBER: _ClassVar[int]
    REGISTER_TASK_FIELD_NUMBER: _ClassVar[int]
    REPLAY_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    REVOKE_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    ROTATE_SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    SKIP_GROUP_FIELD_NUMBER: _ClassVar[int]
    UNBLOCK_GROUP_FIELD_NUMBER: _ClassVar[int]
    UPDATE_CLIENT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TASK_FIELD_NUMBER: _ClassVar[int]
    bulk_dead_letters: BulkDeadLettersResponse
    cancel_task: CancelTaskResponse
    cancel_tasks: CancelTasksResponse
    change_cluster: ChangeClusterResponse
    change_password: ChangePasswordResponse
    delete_dead_letter: DeleteDeadLetterResponse
    deregister_client: DeregisterClientResponse
    error: Error
    get_client: GetClientResponse
    get_cluster: GetClusterResponse
    get_dead_letter: GetDeadLetterResponse
    get_due_histogram: GetDueHistogramResponse
    get_group: GetGroupResponse
    get_routes: GetRoutesResponse
    get_server_info: GetServerInfoResponse
    get_stats: GetStatsResponse
    get_task: GetTaskResponse
    get_task_attempts: GetTaskAttemptsResponse
    list_audit_log: ListAuditLogResponse
    list_clients: ListClientsResponse
    list_completed: ListCompletedResponse
    list_dead_letters: ListDeadLettersResponse
    list_groups: ListGroupsResponse
    list_pools: ListPoolsResponse
    list_sessions: ListSessionsResponse
    list_tasks: ListTasksResponse
    login: LoginResponse
    logout: LogoutResponse
    purge_dead_letters: PurgeDeadLettersResponse
    refresh_session: RefreshSessionResponse
    register_client: RegisterClientResponse
    register_task: RegisterTaskResponse
    register_tasks: RegisterTasksResponse
    replay_dead_letter: ReplayDeadLetterResponse
    request_id: int
    revoke_sessions: RevokeSessionsResponse
    rotate_signing_secret: RotateSigningSecretResponse
    skip_group: SkipGroupResponse
    unblock_group: UnblockGroupResponse
    update_client: UpdateClientResponse
    update_task: UpdateTaskResponse
    def __init__(self, request_id: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., login: _Optional[_Union[LoginResponse, _Mapping]] = ..., refresh_session: _Optional[_Union[RefreshSessionResponse, _Mapping]] = ..., register_client: _Optional[_Union[RegisterClientResponse, _Mapping]] = ..., deregister_client: _Optional[_Union[DeregisterClientResponse, _Mapping]] = ..., list_clients: _Optional[_Union[ListClientsResponse, _Mapping]] = ..., register_task: _Optional[_Union[RegisterTaskResponse, _Mapping]] = ..., update_task: _Optional[_Union[UpdateTaskResponse, _Mapping]] = ..., cancel_task: _Optional[_Union[CancelTaskResponse, _Mapping]] = ..., get_task: _Optional[_Union[GetTaskResponse, _Mapping]] = ..., list_tasks: _Optional[_Union[ListTasksResponse, _Mapping]] = ..., list_dead_letters: _Optional[_Union[ListDeadLettersResponse, _Mapping]] = ..., get_dead_letter: _Optional[_Union[GetDeadLetterResponse, _Mapping]] = ..., replay_dead_letter: _Optional[_Union[ReplayDeadLetterResponse, _Mapping]] = ..., delete_dead_letter: _Optional[_Union[DeleteDeadLetterResponse, _Mapping]] = ..., get_group: _Optional[_Union[GetGroupResponse, _Mapping]] = ..., unblock_group: _Optional[_Union[UnblockGroupResponse, _Mapping]] = ..., skip_group: _Optional[_Union[SkipGroupResponse, _Mapping]] = ..., get_server_info: _Optional[_Union[GetServerInfoResponse, _Mapping]] = ..., cancel_tasks: _Optional[_Union[CancelTasksResponse, _Mapping]] = ..., purge_dead_letters: _Optional[_Union[PurgeDeadLettersResponse, _Mapping]] = ..., logout: _Optional[_Union[LogoutResponse, _Mapping]] = ..., list_sessions: _Optional[_Union[ListSessionsResponse, _Mapping]] = ..., revoke_sessions: _Optional[_Union[RevokeSessionsResponse, _Mapping]] = ..., get_client: _Optional[_Union[GetClientResponse, _Mapping]] = ..., update_client: _Optional[_Union[UpdateClientResponse, _Mapping]] = ..., change_password: _Optional[_Union[ChangePasswordResponse, _Mapping]] = ..., rotate_signing_secret: _Optional[_Union[RotateSigningSecretResponse, _Mapping]] = ..., list_groups: _Optional[_Union[ListGroupsResponse, _Mapping]] = ..., get_stats: _Optional[_Union[GetStatsResponse, _Mapping]] = ..., get_due_histogram: _Optional[_Union[GetDueHistogramResponse, _Mapping]] = ..., get_task_attempts: _Optional[_Union[GetTaskAttemptsResponse, _Mapping]] = ..., list_completed: _Optional[_Union[ListCompletedResponse, _Mapping]] = ..., list_audit_log: _Optional[_Union[ListAuditLogResponse, _Mapping]] = ..., bulk_dead_letters: _Optional[_Union[BulkDeadLettersResponse, _Mapping]] = ..., get_cluster: _Optional[_Union[GetClusterResponse, _Mapping]] = ..., list_pools: _Optional[_Union[ListPoolsResponse, _Mapping]] = ..., register_tasks: _Optional[_Union[RegisterTasksResponse, _Mapping]] = ..., change_cluster: _Optional[_Union[ChangeClusterResponse, _Mapping]] = ..., get_routes: _Optional[_Union[GetRoutesResponse, _Mapping]] = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ["backoff", "initial_interval_ms", "jitter", "max_attempts", "max_interval_ms", "multiplier"]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    INITIAL_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    backoff: Backoff
    initial_interval_ms: int
    jitter: float
    max_attempts: int
    max_interval_ms: int
    multiplier: float
    def __init__(self, backoff: _Optional[_Union[Backoff, str]] = ..., initial_interval_ms: _Optional[int] = ..., max_interval_ms: _Optional[int] = ..., multiplier: _Optional[float] = ..., jitter: _Optional[float] = ..., max_attempts: _Optional[int] = ...) -> None: ...

class RevokeSessionsRequest(_message.Message):
    __slots__ = ["client", "handle"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    client: str
    handle: str
    def __init__(self, client: _Optional[str] = ..., handle: _Optional[str] = ...) -> None: ...

class RevokeSessionsResponse(_message.Message):
    __slots__ = ["revoked"]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    revoked: int
    def __init__(self, revoked: _Optional[int] = ...) -> None: ...

class RotateSigningSecretRequest(_message.Message):
    __slots__ = ["client_id", "overlap_ms", "signing_secret"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_MS_FIELD_NUMBER: _ClassVar[int]
    SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    overlap_ms: int
    signing_secret: bytes
    def __init__(self, client_id: _Optional[str] = ..., signing_secret: _Optional[bytes] = ..., overlap_ms: _Optional[int] = ...) -> None: ...

class RotateSigningSecretResponse(_message.Message):
    __slots__ = ["client", "signing_secret"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SIGNING_SECRET_FIELD_NUMBER: _ClassVar[int]
    client: ClientConfig
    signing_secret: bytes
    def __init__(self, client: _Optional[_Union[ClientConfig, _Mapping]] = ..., signing_secret: _Optional[bytes] = ...) -> None: ...

class RouteNode(_message.Message):
    __slots__ = ["id", "tcp_address"]
    ID_FIELD_NUMBER: _ClassVar[int]
    TCP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    id: str
    tcp_address: str
    def __init__(self, id: _Optional[str] = ..., tcp_address: _Optional[str] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ["client", "created_ms", "current", "expires_ms", "handle", "role", "source"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_MS_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    client: str
    created_ms: int
    current: bool
    expires_ms: int
    handle: str
    role: Role
    source: str
    def __init__(self, handle: _Optional[str] = ..., client: _Optional[str] = ..., role: _Optional[_Union[Role, str]] = ..., created_ms: _Optional[int] = ..., expires_ms: _Optional[int] = ..., source: _Optional[str] = ..., current: bool = ...) -> None: ...

class ShardMove(_message.Message):
    __slots__ = ["shard", "to"]
    FROM_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    shard: int
    to: str
    def __init__(self, shard: _Optional[int] = ..., to: _Optional[str] = ..., **kwargs) -> None: ...

class SkipGroupRequest(_message.Message):
    __slots__ = ["client", "group"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    client: str
    group: str
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class SkipGroupResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StatsSample(_message.Message):
    __slots__ = ["at_ms", "attempt_duration", "attempts", "blocked_groups", "by_protocol", "dead_lettered", "dead_letters", "delivered", "delivering", "failed", "fire_lag", "registered", "waiting", "wheel"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_DURATION_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_GROUPS_FIELD_NUMBER: _ClassVar[int]
    BY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    DELIVERING_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    FIRE_LAG_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    WHEEL_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    attempt_duration: Percentiles
    attempts: int
    blocked_groups: int
    by_protocol: _containers.RepeatedCompositeFieldContainer[ProtocolCount]
    dead_lettered: int
    dead_letters: int
    delivered: int
    delivering: int
    failed: int
    fire_lag: Percentiles
    registered: int
    waiting: int
    wheel: int
    def __init__(self, at_ms: _Optional[int] = ..., registered: _Optional[int] = ..., attempts: _Optional[int] = ..., delivered: _Optional[int] = ..., failed: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., dead_letters: _Optional[int] = ..., blocked_groups: _Optional[int] = ..., delivering: _Optional[int] = ..., waiting: _Optional[int] = ..., wheel: _Optional[int] = ..., by_protocol: _Optional[_Iterable[_Union[ProtocolCount, _Mapping]]] = ..., fire_lag: _Optional[_Union[Percentiles, _Mapping]] = ..., attempt_duration: _Optional[_Union[Percentiles, _Mapping]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["attempts", "blocked_by_dead_letter", "callback", "client", "created_ms", "cron", "fire_at_ms", "fires", "group", "id", "idempotency_key", "last_error", "mode", "next_attempt_ms", "next_fire_at_ms", "payload", "repeat_interval_ms", "replace_key", "retry", "seq", "status", "time_zone", "updated_ms"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BLOCKED_BY_DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    FIRES_FIELD_NUMBER: _ClassVar[int]
    FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_MS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REPEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    REPLACE_KEY_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_MS_FIELD_NUMBER: _ClassVar[int]
    attempts: int
    blocked_by_dead_letter: int
    callback: Callback
    client: str
    created_ms: int
    cron: str
    fire_at_ms: int
    fires: int
    group: str
    id: int
    idempotency_key: str
    last_error: str
    mode: DispatchMode
    next_attempt_ms: int
    next_fire_at_ms: _containers.RepeatedScalarFieldContainer[int]
    payload: bytes
    repeat_interval_ms: int
    replace_key: str
    retry: RetryPolicy
    seq: int
    status: TaskStatus
    time_zone: str
    updated_ms: int
    def __init__(self, id: _Optional[int] = ..., client: _Optional[str] = ..., group: _Optional[str] = ..., payload: _Optional[bytes] = ..., fire_at_ms: _Optional[int] = ..., repeat_interval_ms: _Optional[int] = ..., seq: _Optional[int] = ..., mode: _Optional[_Union[DispatchMode, str]] = ..., status: _Optional[_Union[TaskStatus, str]] = ..., attempts: _Optional[int] = ..., next_attempt_ms: _Optional[int] = ..., last_error: _Optional[str] = ..., fires: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., callback: _Optional[_Union[Callback, _Mapping]] = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., created_ms: _Optional[int] = ..., updated_ms: _Optional[int] = ..., blocked_by_dead_letter: _Optional[int] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., next_fire_at_ms: _Optional[_Iterable[int]] = ..., replace_key: _Optional[str] = ...) -> None: ...

class UnblockGroupRequest(_message.Message):
    __slots__ = ["client", "group"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    client: str
    group: str
    def __init__(self, client: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class UnblockGroupResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class UpdateClientRequest(_message.Message):
    __slots__ = ["callback", "callback_rules", "clear_callback", "clear_retry", "client_id", "dead_letters", "default_mode", "group_limit", "group_rate_limit", "group_rate_limits", "retry", "role"]
    class GroupRateLimitsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: RateLimit
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...
    CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CALLBACK_RULES_FIELD_NUMBER: _ClassVar[int]
    CLEAR_CALLBACK_FIELD_NUMBER: _ClassVar[int]
    CLEAR_RETRY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    GROUP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    callback: Callback
    callback_rules: CallbackRules
    clear_callback: bool
    clear_retry: bool
    client_id: str
    dead_letters: DeadLetterPolicy
    default_mode: DispatchMode
    group_limit: int
    group_rate_limit: RateLimit
    group_rate_limits: _containers.MessageMap[str, RateLimit]
    retry: RetryPolicy
    role: Role
    def __init__(self, client_id: _Optional[str] = ..., callback: _Optional[_Union[Callback, _Mapping]] = ..., clear_callback: bool = ..., retry: _Optional[_Union[RetryPolicy, _Mapping]] = ..., clear_retry: bool = ..., dead_letters: _Optional[_Union[DeadLetterPolicy, _Mapping]] = ..., default_mode: _Optional[_Union[DispatchMode, str]] = ..., role: _Optional[_Union[Role, str]] = ..., callback_rules: _Optional[_Union[CallbackRules, _Mapping]] = ..., group_limit: _Optional[int] = ..., group_rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ..., group_rate_limits: _Optional[_Mapping[str, RateLimit]] = ...) -> None: ...

class UpdateClientResponse(_message.Message):
    __slots__ = ["client"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    client: ClientConfig
    def __init__(self, client: _Optional[_Union[ClientConfig, _Mapping]] = ...) -> None: ...

class UpdateTaskRequest(_message.Message):
    __slots__ = ["cron", "delay_ms", "fire_at_ms", "id", "payload", "repeat_interval_ms", "time_zone"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    FIRE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    REPEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    cron: str
    delay_ms: int
    fire_at_ms: int
    id: int
    payload: bytes
    repeat_interval_ms: int
    time_zone: str
    def __init__(self, id: _Optional[int] = ..., payload: _Optional[bytes] = ..., delay_ms: _Optional[int] = ..., fire_at_ms: _Optional[int] = ..., repeat_interval_ms: _Optional[int] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ...) -> None: ...

class UpdateTaskResponse(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DispatchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Protocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Backoff(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class TaskOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BulkAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
