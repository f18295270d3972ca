-- HAProxy Lua (2.6 or later) for haproxy-kubernetes.cfg: the name of the `replicas` server
-- whose address is the one a replica id carries.
--
-- In Kubernetes, HAProxy discovers replicas through the headless Service's DNS
-- (`server-template`), so its servers are named pod1, pod2, ... and know only addresses. The
-- Deployment makes each replica id `<pod name>_<pod IP>` (docs/kubernetes.md): unique, and
-- routable. `replica_server` takes the affinity key (the text after a handle's last '@') and
-- answers the server with that IP, or nothing (then the request is balanced, and the live
-- replica that gets it answers with the error naming the replica the handle belongs to).
core.register_converters("replica_server", function(key)
  local ip = key:match("_([0-9.]+)$") or key:match("^([0-9.]+)$")
  if ip == nil then
    return nil
  end
  local backend = core.backends["replicas"]
  if backend == nil then
    return nil
  end
  for name, server in pairs(backend.servers) do
    local addr = server:get_addr()
    if addr ~= nil and addr:match("^(.+):%d+$") == ip then
      return name
    end
  end
  return nil
end)
