//! A large synthetic tool catalog, generated deterministically, for the search evaluation
//! and benchmark: many SaaS-like servers, each with CRUD tools over its entities plus a few
//! tools of its own, named in the three styles servers use (snake_case, camelCase,
//! kebab-case), described the way real servers describe theirs.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::json;

/// (server, product, entities as (singular, plural), tools of its own as (name, description)).
type Domain = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, &'static str)],
);

const DOMAINS: &[Domain] = &[
    (
        "github",
        "GitHub",
        &[
            ("repository", "repositories"),
            ("issue", "issues"),
            ("pull_request", "pull_requests"),
            ("release", "releases"),
            ("workflow", "workflows"),
            ("gist", "gists"),
            ("team", "teams"),
            ("webhook", "webhooks"),
        ],
        &[
            (
                "merge_pull_request",
                "Merge an open pull request into its base branch using merge, squash or rebase.",
            ),
            (
                "fork_repository",
                "Fork a repository into your account or an organization.",
            ),
            (
                "star_repository",
                "Star a repository for the authenticated user.",
            ),
            (
                "rerun_workflow",
                "Re-run a failed GitHub Actions workflow run.",
            ),
        ],
    ),
    (
        "gitlab",
        "GitLab",
        &[
            ("project", "projects"),
            ("merge_request", "merge_requests"),
            ("pipeline", "pipelines"),
            ("runner", "runners"),
            ("milestone", "milestones"),
            ("label", "labels"),
            ("snippet", "snippets"),
            ("group", "groups"),
        ],
        &[
            (
                "retry_pipeline",
                "Retry the failed jobs of a CI/CD pipeline.",
            ),
            (
                "approve_merge_request",
                "Approve a merge request as the current user.",
            ),
        ],
    ),
    (
        "jira",
        "Jira",
        &[
            ("issue", "issues"),
            ("project", "projects"),
            ("sprint", "sprints"),
            ("board", "boards"),
            ("epic", "epics"),
            ("worklog", "worklogs"),
            ("component", "components"),
            ("version", "versions"),
        ],
        &[
            (
                "transition_issue",
                "Move a Jira issue to another workflow status such as In Progress or Done.",
            ),
            ("assign_issue", "Assign an issue to a user, or unassign it."),
            ("log_work", "Log time spent working on an issue."),
        ],
    ),
    (
        "linear",
        "Linear",
        &[
            ("issue", "issues"),
            ("cycle", "cycles"),
            ("team", "teams"),
            ("roadmap", "roadmaps"),
            ("label", "labels"),
            ("comment", "comments"),
            ("initiative", "initiatives"),
            ("view", "views"),
        ],
        &[(
            "archive_issue",
            "Archive a Linear issue so it no longer shows in active views.",
        )],
    ),
    (
        "slack",
        "Slack",
        &[
            ("channel", "channels"),
            ("message", "messages"),
            ("user", "users"),
            ("reminder", "reminders"),
            ("bookmark", "bookmarks"),
            ("usergroup", "usergroups"),
            ("emoji", "emojis"),
            ("file", "files"),
        ],
        &[
            (
                "post_message",
                "Post a message to a Slack channel or direct message conversation.",
            ),
            ("add_reaction", "Add an emoji reaction to a message."),
            ("invite_to_channel", "Invite users to a Slack channel."),
            (
                "set_user_status",
                "Set the status text and emoji of the current user.",
            ),
        ],
    ),
    (
        "discord",
        "Discord",
        &[
            ("guild", "guilds"),
            ("channel", "channels"),
            ("role", "roles"),
            ("member", "members"),
            ("invite", "invites"),
            ("thread", "threads"),
            ("webhook", "webhooks"),
            ("sticker", "stickers"),
        ],
        &[
            (
                "send_channel_message",
                "Send a message to a Discord channel.",
            ),
            ("ban_member", "Ban a member from a Discord server (guild)."),
        ],
    ),
    (
        "stripe",
        "Stripe",
        &[
            ("customer", "customers"),
            ("charge", "charges"),
            ("subscription", "subscriptions"),
            ("invoice", "invoices"),
            ("product", "products"),
            ("price", "prices"),
            ("coupon", "coupons"),
            ("payout", "payouts"),
        ],
        &[
            (
                "refund_charge",
                "Refund a charge fully or partially back to the customer's card.",
            ),
            (
                "cancel_subscription",
                "Cancel a customer's subscription immediately or at period end.",
            ),
            (
                "create_payment_link",
                "Create a shareable payment link for a product.",
            ),
            (
                "retrieve_balance",
                "Retrieve the current Stripe account balance.",
            ),
        ],
    ),
    (
        "shopify",
        "Shopify",
        &[
            ("product", "products"),
            ("order", "orders"),
            ("customer", "customers"),
            ("collection", "collections"),
            ("inventory_item", "inventory_items"),
            ("discount", "discounts"),
            ("fulfillment", "fulfillments"),
            ("location", "locations"),
        ],
        &[
            (
                "adjust_inventory_level",
                "Adjust the available quantity of an inventory item at a location.",
            ),
            (
                "fulfill_order",
                "Mark an order as fulfilled and notify the customer with tracking info.",
            ),
        ],
    ),
    (
        "salesforce",
        "Salesforce",
        &[
            ("account", "accounts"),
            ("contact", "contacts"),
            ("lead", "leads"),
            ("opportunity", "opportunities"),
            ("case", "cases"),
            ("campaign", "campaigns"),
            ("task", "tasks"),
            ("report", "reports"),
        ],
        &[
            (
                "run_soql_query",
                "Run a SOQL query against Salesforce objects and return the records.",
            ),
            (
                "convert_lead",
                "Convert a lead into an account, contact and opportunity.",
            ),
        ],
    ),
    (
        "hubspot",
        "HubSpot",
        &[
            ("contact", "contacts"),
            ("company", "companies"),
            ("deal", "deals"),
            ("ticket", "tickets"),
            ("pipeline", "pipelines"),
            ("owner", "owners"),
            ("engagement", "engagements"),
            ("form", "forms"),
        ],
        &[(
            "associate_objects",
            "Associate two CRM records, such as a contact with a company.",
        )],
    ),
    (
        "zendesk",
        "Zendesk",
        &[
            ("ticket", "tickets"),
            ("user", "users"),
            ("organization", "organizations"),
            ("macro", "macros"),
            ("view", "views"),
            ("article", "articles"),
            ("group", "groups"),
            ("satisfaction_rating", "satisfaction_ratings"),
        ],
        &[
            (
                "apply_macro",
                "Apply a support macro to a ticket to update fields and add a reply.",
            ),
            ("merge_tickets", "Merge duplicate support tickets into one."),
        ],
    ),
    (
        "notion",
        "Notion",
        &[
            ("page", "pages"),
            ("database", "databases"),
            ("block", "blocks"),
            ("comment", "comments"),
            ("user", "users"),
            ("template", "templates"),
            ("property", "properties"),
            ("workspace", "workspaces"),
        ],
        &[
            (
                "query_database",
                "Query a Notion database with filters and sorts and return matching pages.",
            ),
            (
                "append_block_children",
                "Append content blocks to a page or block.",
            ),
        ],
    ),
    (
        "confluence",
        "Confluence",
        &[
            ("space", "spaces"),
            ("page", "pages"),
            ("attachment", "attachments"),
            ("comment", "comments"),
            ("label", "labels"),
            ("blogpost", "blogposts"),
            ("template", "templates"),
            ("restriction", "restrictions"),
        ],
        &[("cql_search", "Search Confluence content with a CQL query.")],
    ),
    (
        "gdrive",
        "Google Drive",
        &[
            ("file", "files"),
            ("folder", "folders"),
            ("permission", "permissions"),
            ("revision", "revisions"),
            ("shared_drive", "shared_drives"),
            ("comment", "comments"),
            ("shortcut", "shortcuts"),
            ("label", "labels"),
        ],
        &[
            (
                "share_file",
                "Share a Drive file with a user, group or anyone with the link.",
            ),
            (
                "export_document",
                "Export a Google Docs document as PDF, DOCX or plain text.",
            ),
            (
                "upload_file",
                "Upload a local file's content to Google Drive.",
            ),
        ],
    ),
    (
        "gmail",
        "Gmail",
        &[
            ("message", "messages"),
            ("thread", "threads"),
            ("draft", "drafts"),
            ("label", "labels"),
            ("filter", "filters"),
            ("attachment", "attachments"),
            ("alias", "aliases"),
            ("delegate", "delegates"),
        ],
        &[
            (
                "send_email",
                "Send an email with subject, body, recipients and optional attachments.",
            ),
            ("mark_as_read", "Mark Gmail messages as read."),
            (
                "reply_to_thread",
                "Reply to an email thread, keeping the subject and recipients.",
            ),
        ],
    ),
    (
        "gcal",
        "Google Calendar",
        &[
            ("event", "events"),
            ("calendar", "calendars"),
            ("attendee", "attendees"),
            ("acl_rule", "acl_rules"),
            ("reminder", "reminders"),
            ("color", "colors"),
            ("setting", "settings"),
            ("room", "rooms"),
        ],
        &[
            (
                "find_free_slots",
                "Find free time slots shared by several people's calendars.",
            ),
            (
                "quick_add_event",
                "Create an event from a text like 'Lunch with Ana tomorrow at noon'.",
            ),
        ],
    ),
    (
        "outlook",
        "Outlook",
        &[
            ("mail", "mails"),
            ("folder", "folders"),
            ("contact", "contacts"),
            ("meeting", "meetings"),
            ("category", "categories"),
            ("rule", "rules"),
            ("signature", "signatures"),
            ("room", "rooms"),
        ],
        &[(
            "schedule_meeting",
            "Schedule a Teams meeting and send invitations to attendees.",
        )],
    ),
    (
        "postgres",
        "PostgreSQL",
        &[
            ("table", "tables"),
            ("schema", "schemas"),
            ("index", "indexes"),
            ("view", "views"),
            ("role", "roles"),
            ("extension", "extensions"),
            ("function", "functions"),
            ("trigger", "triggers"),
        ],
        &[
            (
                "run_sql_query",
                "Execute a read-only SQL query against the PostgreSQL database and return rows.",
            ),
            (
                "explain_query",
                "Show the execution plan of a SQL query with EXPLAIN ANALYZE.",
            ),
            (
                "describe_table",
                "Describe a table's columns, types, constraints and indexes.",
            ),
        ],
    ),
    (
        "mysql",
        "MySQL",
        &[
            ("table", "tables"),
            ("database", "databases"),
            ("user", "users"),
            ("procedure", "procedures"),
            ("event", "events"),
            ("grant", "grants"),
            ("partition", "partitions"),
            ("trigger", "triggers"),
        ],
        &[(
            "execute_statement",
            "Execute a SQL statement on the MySQL server.",
        )],
    ),
    (
        "mongodb",
        "MongoDB",
        &[
            ("collection", "collections"),
            ("document", "documents"),
            ("index", "indexes"),
            ("database", "databases"),
            ("user", "users"),
            ("view", "views"),
            ("cluster", "clusters"),
            ("backup", "backups"),
        ],
        &[
            (
                "aggregate",
                "Run an aggregation pipeline on a MongoDB collection.",
            ),
            (
                "count_documents",
                "Count documents in a collection that match a filter.",
            ),
        ],
    ),
    (
        "redis",
        "Redis",
        &[
            ("key", "keys"),
            ("stream", "streams"),
            ("hash", "hashes"),
            ("list", "lists"),
            ("set", "sets"),
            ("channel", "channels"),
            ("module", "modules"),
            ("client", "clients"),
        ],
        &[
            (
                "set_key_expiry",
                "Set a time-to-live on a Redis key so it expires.",
            ),
            (
                "publish_message",
                "Publish a message to a Redis pub/sub channel.",
            ),
        ],
    ),
    (
        "elasticsearch",
        "Elasticsearch",
        &[
            ("index", "indices"),
            ("document", "documents"),
            ("alias", "aliases"),
            ("mapping", "mappings"),
            ("snapshot", "snapshots"),
            ("pipeline", "pipelines"),
            ("template", "templates"),
            ("node", "nodes"),
        ],
        &[
            (
                "full_text_search",
                "Run a full-text search query over an Elasticsearch index.",
            ),
            ("reindex", "Copy documents from one index to another."),
        ],
    ),
    (
        "aws",
        "AWS",
        &[
            ("ec2_instance", "ec2_instances"),
            ("s3_bucket", "s3_buckets"),
            ("lambda_function", "lambda_functions"),
            ("iam_role", "iam_roles"),
            ("security_group", "security_groups"),
            ("rds_instance", "rds_instances"),
            ("cloudwatch_alarm", "cloudwatch_alarms"),
            ("sqs_queue", "sqs_queues"),
        ],
        &[
            ("upload_s3_object", "Upload an object to an S3 bucket."),
            (
                "invoke_lambda",
                "Invoke a Lambda function with a JSON payload and return its response.",
            ),
            (
                "get_cost_and_usage",
                "Get AWS cost and usage for a time period, grouped by service.",
            ),
            ("start_instance", "Start a stopped EC2 instance."),
        ],
    ),
    (
        "gcp",
        "Google Cloud",
        &[
            ("compute_instance", "compute_instances"),
            ("storage_bucket", "storage_buckets"),
            ("cloud_function", "cloud_functions"),
            ("service_account", "service_accounts"),
            ("firewall_rule", "firewall_rules"),
            ("sql_instance", "sql_instances"),
            ("pubsub_topic", "pubsub_topics"),
            ("secret", "secrets"),
        ],
        &[(
            "run_bigquery_query",
            "Run a BigQuery SQL query and return the result rows.",
        )],
    ),
    (
        "azure",
        "Azure",
        &[
            ("virtual_machine", "virtual_machines"),
            ("resource_group", "resource_groups"),
            ("storage_account", "storage_accounts"),
            ("app_service", "app_services"),
            ("key_vault", "key_vaults"),
            ("aks_cluster", "aks_clusters"),
            ("cosmos_account", "cosmos_accounts"),
            ("vnet", "vnets"),
        ],
        &[(
            "restart_app_service",
            "Restart an Azure App Service web app.",
        )],
    ),
    (
        "kubernetes",
        "Kubernetes",
        &[
            ("pod", "pods"),
            ("deployment", "deployments"),
            ("service", "services"),
            ("namespace", "namespaces"),
            ("configmap", "configmaps"),
            ("secret", "secrets"),
            ("ingress", "ingresses"),
            ("cronjob", "cronjobs"),
        ],
        &[
            (
                "get_pod_logs",
                "Get the logs of a container in a Kubernetes pod.",
            ),
            (
                "scale_deployment",
                "Scale a deployment to a number of replicas.",
            ),
            (
                "rollout_restart",
                "Restart a deployment's pods with a rolling update.",
            ),
            (
                "exec_in_pod",
                "Execute a command inside a running pod's container.",
            ),
        ],
    ),
    (
        "docker",
        "Docker",
        &[
            ("container", "containers"),
            ("image", "images"),
            ("volume", "volumes"),
            ("network", "networks"),
            ("registry", "registries"),
            ("secret", "secrets"),
            ("node", "nodes"),
            ("plugin", "plugins"),
        ],
        &[
            (
                "build_image",
                "Build a Docker image from a Dockerfile and context directory.",
            ),
            (
                "container_logs",
                "Fetch the stdout and stderr logs of a container.",
            ),
        ],
    ),
    (
        "vercel",
        "Vercel",
        &[
            ("deployment", "deployments"),
            ("project", "projects"),
            ("domain", "domains"),
            ("env_var", "env_vars"),
            ("team", "teams"),
            ("alias", "aliases"),
            ("check", "checks"),
            ("log_drain", "log_drains"),
        ],
        &[
            (
                "promote_deployment",
                "Promote a preview deployment to production.",
            ),
            (
                "get_build_logs",
                "Get the build output logs of a deployment.",
            ),
        ],
    ),
    (
        "cloudflare",
        "Cloudflare",
        &[
            ("zone", "zones"),
            ("dns_record", "dns_records"),
            ("worker", "workers"),
            ("kv_namespace", "kv_namespaces"),
            ("firewall_rule", "firewall_rules"),
            ("certificate", "certificates"),
            ("page_rule", "page_rules"),
            ("r2_bucket", "r2_buckets"),
        ],
        &[(
            "purge_cache",
            "Purge cached files from Cloudflare's edge for a zone.",
        )],
    ),
    (
        "datadog",
        "Datadog",
        &[
            ("monitor", "monitors"),
            ("dashboard", "dashboards"),
            ("incident", "incidents"),
            ("slo", "slos"),
            ("host", "hosts"),
            ("synthetic_test", "synthetic_tests"),
            ("downtime", "downtimes"),
            ("notebook", "notebooks"),
        ],
        &[
            (
                "query_metrics",
                "Query timeseries metrics such as CPU usage over a time range.",
            ),
            (
                "search_logs",
                "Search log events with a query and time range.",
            ),
            ("mute_monitor", "Mute a monitor so it stops alerting."),
        ],
    ),
    (
        "pagerduty",
        "PagerDuty",
        &[
            ("incident", "incidents"),
            ("service", "services"),
            ("schedule", "schedules"),
            ("escalation_policy", "escalation_policies"),
            ("user", "users"),
            ("team", "teams"),
            ("maintenance_window", "maintenance_windows"),
            ("priority", "priorities"),
        ],
        &[
            (
                "acknowledge_incident",
                "Acknowledge a triggered incident to stop escalation.",
            ),
            (
                "get_oncall",
                "Get who is on call now for a schedule or escalation policy.",
            ),
        ],
    ),
    (
        "sentry",
        "Sentry",
        &[
            ("issue", "issues"),
            ("event", "events"),
            ("project", "projects"),
            ("release", "releases"),
            ("alert_rule", "alert_rules"),
            ("team", "teams"),
            ("organization", "organizations"),
            ("replay", "replays"),
        ],
        &[
            ("resolve_issue", "Mark a Sentry error issue as resolved."),
            (
                "get_stack_trace",
                "Get the full stack trace of an error event.",
            ),
        ],
    ),
    (
        "figma",
        "Figma",
        &[
            ("file", "files"),
            ("component", "components"),
            ("style", "styles"),
            ("comment", "comments"),
            ("project", "projects"),
            ("frame", "frames"),
            ("variable", "variables"),
            ("version", "versions"),
        ],
        &[(
            "export_images",
            "Render frames or nodes of a Figma file as PNG or SVG images.",
        )],
    ),
    (
        "twilio",
        "Twilio",
        &[
            ("message", "messages"),
            ("call", "calls"),
            ("phone_number", "phone_numbers"),
            ("recording", "recordings"),
            ("conversation", "conversations"),
            ("verification", "verifications"),
            ("queue", "queues"),
            ("address", "addresses"),
        ],
        &[
            ("send_sms", "Send an SMS text message to a phone number."),
            (
                "make_call",
                "Place an outbound phone call that plays a message.",
            ),
        ],
    ),
    (
        "sendgrid",
        "SendGrid",
        &[
            ("template", "templates"),
            ("contact", "contacts"),
            ("list", "lists"),
            ("segment", "segments"),
            ("sender", "senders"),
            ("suppression", "suppressions"),
            ("campaign", "campaigns"),
            ("api_key", "api_keys"),
        ],
        &[(
            "send_transactional_email",
            "Send a transactional email from a dynamic template.",
        )],
    ),
    (
        "airtable",
        "Airtable",
        &[
            ("base", "bases"),
            ("table", "tables"),
            ("record", "records"),
            ("field", "fields"),
            ("view", "views"),
            ("comment", "comments"),
            ("webhook", "webhooks"),
            ("attachment", "attachments"),
        ],
        &[(
            "upsert_records",
            "Create or update records in an Airtable table matched on fields.",
        )],
    ),
    (
        "asana",
        "Asana",
        &[
            ("task", "tasks"),
            ("project", "projects"),
            ("section", "sections"),
            ("workspace", "workspaces"),
            ("goal", "goals"),
            ("portfolio", "portfolios"),
            ("tag", "tags"),
            ("story", "stories"),
        ],
        &[
            ("complete_task", "Mark an Asana task as complete."),
            (
                "add_task_follower",
                "Add followers to a task so they get notified.",
            ),
        ],
    ),
    (
        "trello",
        "Trello",
        &[
            ("board", "boards"),
            ("card", "cards"),
            ("list", "lists"),
            ("checklist", "checklists"),
            ("label", "labels"),
            ("member", "members"),
            ("attachment", "attachments"),
            ("action", "actions"),
        ],
        &[("move_card", "Move a Trello card to another list or board.")],
    ),
    (
        "spotify",
        "Spotify",
        &[
            ("playlist", "playlists"),
            ("track", "tracks"),
            ("album", "albums"),
            ("artist", "artists"),
            ("episode", "episodes"),
            ("show", "shows"),
            ("device", "devices"),
            ("queue_item", "queue_items"),
        ],
        &[
            (
                "play_track",
                "Start playback of a track on the user's active device.",
            ),
            (
                "skip_to_next",
                "Skip to the next track in the playback queue.",
            ),
        ],
    ),
    (
        "weather",
        "OpenWeather",
        &[
            ("forecast", "forecasts"),
            ("station", "stations"),
            ("alert", "alerts"),
            ("location", "locations"),
            ("air_quality_reading", "air_quality_readings"),
            ("map_layer", "map_layers"),
            ("historical_record", "historical_records"),
            ("subscription", "subscriptions"),
        ],
        &[
            (
                "get_current_weather",
                "Get current weather conditions (temperature, wind, humidity) for a city or coordinates.",
            ),
            ("get_uv_index", "Get the UV index forecast for coordinates."),
        ],
    ),
    (
        "maps",
        "Google Maps",
        &[
            ("place", "places"),
            ("route", "routes"),
            ("geofence", "geofences"),
            ("marker", "markers"),
            ("saved_list", "saved_lists"),
            ("review", "reviews"),
            ("photo", "photos"),
            ("elevation_sample", "elevation_samples"),
        ],
        &[
            (
                "geocode_address",
                "Convert a street address into latitude and longitude coordinates.",
            ),
            (
                "get_directions",
                "Get driving, walking or transit directions between two places.",
            ),
            (
                "distance_matrix",
                "Compute travel distance and time between many origins and destinations.",
            ),
        ],
    ),
    (
        "openai",
        "OpenAI",
        &[
            ("file", "files"),
            ("fine_tuning_job", "fine_tuning_jobs"),
            ("assistant", "assistants"),
            ("vector_store", "vector_stores"),
            ("batch", "batches"),
            ("model", "models"),
            ("thread", "threads"),
            ("run", "runs"),
        ],
        &[
            (
                "create_embedding",
                "Create an embedding vector for input text.",
            ),
            ("generate_image", "Generate an image from a text prompt."),
            ("transcribe_audio", "Transcribe an audio file into text."),
        ],
    ),
    (
        "browser",
        "the headless browser",
        &[
            ("tab", "tabs"),
            ("cookie", "cookies"),
            ("download", "downloads"),
            ("bookmark", "bookmarks"),
            ("history_entry", "history_entries"),
            ("extension", "extensions"),
            ("frame", "frames"),
            ("console_message", "console_messages"),
        ],
        &[
            (
                "navigate",
                "Navigate the current tab to a URL and wait for the page to load.",
            ),
            (
                "take_screenshot",
                "Take a screenshot of the current page or an element.",
            ),
            (
                "click_element",
                "Click an element on the page chosen by a CSS selector.",
            ),
            ("fill_form", "Type values into form fields on the page."),
        ],
    ),
    (
        "search",
        "the web search engine",
        &[
            ("saved_search", "saved_searches"),
            ("news_feed", "news_feeds"),
            ("domain_filter", "domain_filters"),
            ("index_request", "index_requests"),
            ("region", "regions"),
            ("safe_search_setting", "safe_search_settings"),
            ("trend", "trends"),
            ("suggestion", "suggestions"),
        ],
        &[
            (
                "web_search",
                "Search the web and return titles, URLs and snippets of the top results.",
            ),
            ("news_search", "Search recent news articles about a topic."),
            (
                "fetch_url",
                "Fetch a web page and return its content as markdown.",
            ),
        ],
    ),
    (
        "quickbooks",
        "QuickBooks",
        &[
            ("invoice", "invoices"),
            ("bill", "bills"),
            ("vendor", "vendors"),
            ("customer", "customers"),
            ("account", "accounts"),
            ("expense", "expenses"),
            ("journal_entry", "journal_entries"),
            ("tax_rate", "tax_rates"),
        ],
        &[
            (
                "get_profit_and_loss",
                "Get the profit and loss report for a period.",
            ),
            (
                "record_payment",
                "Record a customer payment against an open invoice.",
            ),
        ],
    ),
    (
        "youtube",
        "YouTube",
        &[
            ("video", "videos"),
            ("playlist", "playlists"),
            ("channel", "channels"),
            ("comment", "comments"),
            ("caption", "captions"),
            ("subscription", "subscriptions"),
            ("live_broadcast", "live_broadcasts"),
            ("thumbnail", "thumbnails"),
        ],
        &[
            (
                "get_video_transcript",
                "Get the transcript (captions text) of a YouTube video.",
            ),
            ("upload_video", "Upload a video file to a YouTube channel."),
        ],
    ),
];

/// How a server spells multi-word tool names.
#[derive(Clone, Copy)]
enum Style {
    Snake,
    Camel,
    Kebab,
}

fn spell(words: &str, style: Style) -> String {
    let parts: Vec<&str> = words.split('_').collect();
    match style {
        Style::Snake => parts.join("_"),
        Style::Kebab => parts.join("-"),
        Style::Camel => parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    p.to_string()
                } else {
                    let mut c = p.chars();
                    c.next()
                        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                        .unwrap_or_default()
                }
            })
            .collect(),
    }
}

fn human(s: &str) -> String {
    s.replace('_', " ")
}

fn tool(name: String, description: String, schema: serde_json::Value) -> Option<Tool> {
    serde_json::from_value(json!({"name": name, "description": description, "inputSchema": schema}))
        .ok()
}

/// The tools of one domain, under the server name `server`.
fn domain_tools(di: usize, d: &Domain) -> Vec<Tool> {
    let (_, product, entities, extras) = *d;
    let style = [Style::Snake, Style::Camel, Style::Kebab][di % 3];
    let mut out = Vec::new();
    for (ei, (one, many)) in entities.iter().enumerate() {
        let (h1, hn) = (human(one), human(many));
        let v = (di + ei) % 3;
        let id = format!("{one}_id");
        let id_prop = json!({"type": "string", "description": format!("ID of the {h1}")});
        let actions: [(String, String, serde_json::Value); 6] = [
            (
                format!("list_{many}"),
                [
                    format!("List {hn} in {product}, newest first, with optional filters and pagination."),
                    format!("Returns a page of {product} {hn}. Use the cursor to fetch more."),
                    format!("Lists all {hn} the token can access in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "limit": {"type": "integer", "description": format!("Maximum number of {hn} to return")},
                    "cursor": {"type": "string", "description": "Pagination cursor from a previous call"}}}),
            ),
            (
                format!("get_{one}"),
                [
                    format!("Get a single {h1} from {product} by its ID."),
                    format!("Retrieve the details of a {product} {h1}."),
                    format!("Fetches one {h1} with all of its fields."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop.clone()}, "required": [id]}),
            ),
            (
                format!("create_{one}"),
                [
                    format!("Create a new {h1} in {product}."),
                    format!("Creates a {product} {h1} and returns it."),
                    format!("Add a {h1} to {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "description": format!("Name or title of the {h1}")},
                    "description": {"type": "string"}}, "required": ["name"]}),
            ),
            (
                format!("update_{one}"),
                [
                    format!("Update fields of an existing {product} {h1}."),
                    format!("Modify a {h1}; only the given fields change."),
                    format!("Edit the properties of a {h1} in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop.clone(),
                    "fields": {"type": "object", "description": "Fields to change"}}, "required": [id]}),
            ),
            (
                format!("delete_{one}"),
                [
                    format!("Permanently delete a {h1} from {product}."),
                    format!("Deletes a {product} {h1}. This cannot be undone."),
                    format!("Remove a {h1}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {id.clone(): id_prop}, "required": [id]}),
            ),
            (
                format!("search_{many}"),
                [
                    format!("Search {product} {hn} by keyword."),
                    format!("Find {hn} matching a text query."),
                    format!("Full-text search over {hn} in {product}."),
                ][v]
                    .clone(),
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": format!("Keywords to match against {hn}")}}, "required": ["query"]}),
            ),
        ];
        for (name, desc, schema) in actions {
            out.extend(tool(spell(&name, style), desc, schema));
        }
    }
    for (name, desc) in extras.iter() {
        out.extend(tool(
            spell(name, style),
            desc.to_string(),
            json!({"type": "object", "properties": {}}),
        ));
    }
    out
}

/// Server name of domain `di` in copy `copy` (copies stand for more instances of the same
/// kind of server, as in a large organization: `github`, `github-2`, ...).
fn server_name(d: &Domain, copy: usize) -> String {
    if copy == 0 {
        d.0.to_string()
    } else {
        format!("{}-{}", d.0, copy + 1)
    }
}

/// At least `n` tools (whole servers), as (server, tools) lists, always the same.
pub fn catalog(n: usize) -> Vec<(String, Arc<Vec<Tool>>)> {
    let per_copy: Vec<Vec<Tool>> = DOMAINS
        .iter()
        .enumerate()
        .map(|(i, d)| domain_tools(i, d))
        .collect();
    let mut out = Vec::new();
    let mut count = 0;
    let mut copy = 0;
    while count < n {
        for (d, tools) in DOMAINS.iter().zip(&per_copy) {
            if count >= n {
                break;
            }
            out.push((server_name(d, copy), Arc::new(tools.clone())));
            count += tools.len();
        }
        copy += 1;
    }
    out
}

/// Number of tools in one copy of every domain.
pub fn base_size() -> usize {
    DOMAINS
        .iter()
        .map(|(_, _, e, x)| e.len() * 6 + x.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_large_enough() {
        assert!(base_size() >= 2000, "{}", base_size());
        let a = catalog(base_size());
        assert_eq!(a.iter().map(|(_, t)| t.len()).sum::<usize>(), base_size());
        let b = catalog(base_size());
        assert_eq!(
            serde_json::to_string(&a.iter().map(|(s, t)| (s, &**t)).collect::<Vec<_>>()).unwrap(),
            serde_json::to_string(&b.iter().map(|(s, t)| (s, &**t)).collect::<Vec<_>>()).unwrap()
        );
        let big = catalog(10_000);
        assert!(big.iter().map(|(_, t)| t.len()).sum::<usize>() >= 10_000);
        assert!(big.iter().any(|(s, _)| s == "github-2"));
        let names: Vec<&str> = a[1].1.iter().map(|t| &*t.name).take(2).collect();
        assert_eq!(names, ["listProjects", "getProject"]);
    }
}
